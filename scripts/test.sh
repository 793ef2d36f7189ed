#!/usr/bin/env bash
# The project's test command (make test): gofmt and vet, then every test,
# closing with one line "N passed, N failed, N skipped" of top-level tests.
# go test -json is read by internal/testutil/testreport (package lines, then only
# the failed tests', builds' and packages' own output); the exit status is
# non-zero when anything failed. Arguments go to go test (e.g. -short).
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
out=$(gofmt -l .)
if [ -n "$out" ]; then
	echo "gofmt needed:"; echo "$out"; exit 1
fi
$GO vet ./... || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Built first, so that a broken reporter is not mistaken for failed tests.
$GO build -o "$tmp/testreport" ./internal/testutil/testreport/cmd/testreport || exit 1
# stderr too: what go test prints there (it could not start, say) is part
# of the report.
# The libpcap source is built only with -tags pcap (cgo and libpcap's
# headers): where libpcap is installed every test runs in that build, so
# the pcap tests run too (vet above checked the build without it).
tags=()
if [ -e /usr/include/pcap.h ] || [ -e /usr/include/pcap/pcap.h ]; then
	tags=(-tags pcap)
	$GO vet "${tags[@]}" ./capture/... ./agent/ ./cmd/flowmon/ || exit 1
fi
$GO test -json -timeout 12m "${tags[@]}" "$@" ./... >"$tmp/log" 2>&1
status=$?
"$tmp/testreport" -status "$status" <"$tmp/log"
