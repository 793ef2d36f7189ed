#!/usr/bin/env bash
# The project's test command (make test): gofmt and vet, then every test,
# closing with one line "N passed, N failed, N skipped" of top-level tests.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
out=$(gofmt -l .)
if [ -n "$out" ]; then
	echo "gofmt needed:"; echo "$out"; exit 1
fi
$GO vet ./... || exit 1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
$GO test -v -timeout 12m "$@" ./... >"$log" 2>&1
status=$?
# Package lines as go test prints them without -v, then any failure.
grep -E '^(ok|FAIL|\?) ' "$log"
if [ $status -ne 0 ]; then
	echo; echo "failures:"
	grep -E -B2 -A30 -- '--- FAIL|^panic:|build failed|\[setup failed\]' "$log" | head -400
fi
passed=$(grep -c '^--- PASS' "$log")
failed=$(grep -c '^--- FAIL' "$log")
skipped=$(grep -c '^--- SKIP' "$log")
echo "$passed passed, $failed failed, $skipped skipped"
exit $status
