#!/usr/bin/env bash
# Installs what a flowmon target needs beyond Go, on Debian, as root.
#   install-deps.sh test    what `make test` needs
#   install-deps.sh bench   tcpdump, for scripts/bench-replay.sh
set -euo pipefail
need=()
case "${1:-test}" in
test) ;;
bench) command -v tcpdump >/dev/null || need+=(tcpdump) ;;
*) echo "usage: $0 test|bench" >&2; exit 2 ;;
esac
if ! command -v go >/dev/null && [ ! -x /usr/local/go/bin/go ]; then
	need+=(golang-go)
fi
if [ ${#need[@]} -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq "${need[@]}"
fi
