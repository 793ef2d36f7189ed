#!/usr/bin/env bash
# Installs what a flowmon target needs beyond Go, on Debian, as root.
#   install-deps.sh test    what `make test` needs, and golangci-lint (see lint)
#   install-deps.sh lint    golangci-lint for make lint, built from the Go module proxy into
#                           $(go env GOPATH)/bin; needs no root
#   install-deps.sh bench   tcpdump, for scripts/bench-replay.sh
#   install-deps.sh e2e     prometheus, promtool, alertmanager and nfdump (nfcapd), for make e2e,
#                           and the OpenTelemetry Collector of scripts/otelcol, built from the Go
#                           module proxy into the user's cache, where the OTLP tests rebuild it
set -euo pipefail
# The golangci-lint make lint runs: its one pin (the Makefile reads it here).
golangci_lint=v2.15.0
need=()
lint=
case "${1:-test}" in
lint) lint=1 ;;
test)
	lint=1
	command -v capinfos >/dev/null || need+=(tshark)       # capture tests compare counts with capinfos
	command -v tcpreplay >/dev/null || need+=(tcpreplay)   # flowmon run's tests send traces into veth pairs
	command -v tcpdump >/dev/null || need+=(tcpdump)       # the filter's tests compare the frames kept with tcpdump's
	command -v ip >/dev/null || need+=(iproute2)           # and make the pairs in namespaces of their own
	[ -e /usr/include/pcap.h ] || need+=(libpcap-dev)      # the libpcap source (-tags pcap)
	command -v chromium >/dev/null || need+=(chromium)     # the replay report's tests load it in headless Chromium
	command -v clang >/dev/null || need+=(clang llvm)      # bpf's TestGeneratedUpToDate regenerates the eBPF objects
	[ -e /usr/include/bpf/bpf_helpers.h ] || need+=(libbpf-dev) ;; # and their C includes libbpf's helper definitions
bench) for p in tcpdump:tcpdump softflowd:softflowd nfpcapd:nfdump argus:argus-server racount:argus-client; do PATH=$PATH:/usr/sbin command -v "${p%%:*}" >/dev/null || need+=("${p#*:}"); done; [ -x /usr/bin/time ] || need+=(time) ;;
e2e)
	command -v prometheus >/dev/null && command -v promtool >/dev/null || need+=(prometheus)
	command -v prometheus-alertmanager >/dev/null || command -v alertmanager >/dev/null || need+=(prometheus-alertmanager)
	command -v nfcapd >/dev/null && command -v nfdump >/dev/null || need+=(nfdump) ;; # the IPFIX export's collector
*) echo "usage: $0 test|lint|bench|e2e" >&2; exit 2 ;;
esac
if ! command -v go >/dev/null && [ ! -x /usr/local/go/bin/go ]; then
	# Debian's golang-go (1.19 on bookworm) is too old to build this
	# module, and too old (before 1.21) to fetch the toolchain it names.
	want=$(sed -n 's/^go //p' "$(dirname "$0")/../go.mod")
	echo "install-deps: no Go found. flowmon needs Go $want or later; Debian's golang-go is too old." >&2
	echo "  Install it from https://go.dev/dl/ (e.g. into /usr/local/go, then PATH=\$PATH:/usr/local/go/bin)," >&2
	echo "  or any Go 1.21+ with GOTOOLCHAIN=auto, which fetches go$want from the module proxy." >&2
	exit 1
fi
if [ ${#need[@]} -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
if [ "${1:-test}" = e2e ]; then
	# The collector the OTLP export's tests send to (its version is
	# scripts/otelcol/go.mod's; cmd/flowmon/e2e_otlp_test.go builds the
	# same path, relinking only).
	go=$(command -v go || echo /usr/local/go/bin/go)
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/flowmon
	(cd "$(dirname "$0")/otelcol" && CGO_ENABLED=0 "$go" build -o "$cache/otelcol-v0.161.0" .)
fi
if [ -n "$lint" ]; then
	go=$(command -v go || echo /usr/local/go/bin/go)
	bin=$("$go" env GOPATH)/bin
	if [ "$("$bin/golangci-lint" version --short 2>/dev/null)" != "${golangci_lint#v}" ]; then
		GOBIN=$bin "$go" install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$golangci_lint"
	fi
fi
