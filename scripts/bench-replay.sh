#!/usr/bin/env bash
# Replay throughput of flowmon against `tcpdump -r FILE -w /dev/null` on the
# same generated trace, measured alternately in one run (the machine is
# shared and noisy: compare the ratio, not the absolute figures).
set -euo pipefail
bin=${1:-bin/flowmon}
packets=${PACKETS:-2000000}
rounds=${ROUNDS:-5}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$(dirname "$0")/install-deps.sh" bench
trace=$dir/trace.pcap
"$bin" gen -o "$trace" --packets "$packets" --seed 7 >/dev/null
cat "$trace" >/dev/null # into the page cache, for both
best() { sort -n | head -1; }
fm=() fd=() td=()
for _ in $(seq "$rounds"); do
	s=$(date +%s.%N); "$bin" replay --no-progress "$trace" >/dev/null; e=$(date +%s.%N)
	fm+=("$(awk "BEGIN{print $e - $s}")")
	s=$(date +%s.%N); "$bin" replay --no-progress --decode-only "$trace" >/dev/null; e=$(date +%s.%N)
	fd+=("$(awk "BEGIN{print $e - $s}")")
	s=$(date +%s.%N); tcpdump -r "$trace" -w /dev/null 2>/dev/null; e=$(date +%s.%N)
	td+=("$(awk "BEGIN{print $e - $s}")")
done
f=$(printf '%s\n' "${fm[@]}" | best)
d=$(printf '%s\n' "${fd[@]}" | best)
t=$(printf '%s\n' "${td[@]}" | best)
n=$("$bin" replay --json --no-progress "$trace" | sed 's/.*"packets":\([0-9]*\).*/\1/')
printf 'trace: %s packets, %s bytes\n' "$n" "$(stat -c %s "$trace")"
awk -v n="$n" -v f="$f" -v d="$d" -v t="$t" -v r="$rounds" 'BEGIN{
	printf "flowmon replay --decode-only: best of %d %.3f s  %.2f Mpkt/s\n", r, d, n/d/1e6
	printf "flowmon replay (all stages):  best of %d %.3f s  %.2f Mpkt/s\n", r, f, n/f/1e6
	printf "tcpdump -r FILE -w /dev/null: best of %d %.3f s  %.2f Mpkt/s\n", r, t, n/t/1e6
	printf "read+decode vs tcpdump (tcpdump time / flowmon time): %.2f\n", t/d
	printf "full pipeline vs tcpdump: %.2f\n", t/f }'
