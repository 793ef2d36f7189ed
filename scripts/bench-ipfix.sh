#!/usr/bin/env bash
# The cost of IPFIX export: flowmon replay of a trace with no export
# against the same replay exporting to nfcapd on loopback (UDP, biflow),
# in alternating pairs, each run timed by GNU time.
#
#   scripts/bench-ipfix.sh BIN TRACE [ROUNDS]   (ROUNDS: 5)
#
# Prints one line a run (mode, wall s, user+sys s, max RSS KiB), then
# the median wall times, their ratio and the median of the paired ratios,
# and what nfcapd received (nfdump -I on its file): flows and sequence
# failures.
set -euo pipefail
BIN=${1:?usage: $0 BIN TRACE [ROUNDS]}
TRACE=${2:?usage: $0 BIN TRACE [ROUNDS]}
ROUNDS=${3:-5}
PORT=${IPFIX_PORT:-47399}
dir=$(mktemp -d)
trap '[ -n "${nfpid:-}" ] && kill "$nfpid" 2>/dev/null; rm -rf "$dir"' EXIT
mkdir -p "$dir/nf"
nfcapd -w "$dir/nf" -b 127.0.0.1 -p "$PORT" -B 8388608 >"$dir/nfcapd.log" 2>&1 &
nfpid=$!
sleep 1
kill -0 "$nfpid" || { cat "$dir/nfcapd.log"; exit 1; }
run() { # mode args...
	local mode=$1
	shift
	/usr/bin/time -f "%e %U %S %M" -o "$dir/time" "$BIN" replay --no-progress --json "$@" "$TRACE" >"$dir/summary.json" 2>"$dir/stderr"
	read -r wall user sys rss <"$dir/time"
	echo "$mode $wall $(echo "$user + $sys" | bc) $rss"
}
: >"$dir/runs"
for ((i = 1; i <= ROUNDS; i++)); do
	if ((i % 2)); then
		run none | tee -a "$dir/runs"
		run ipfix --ipfix "127.0.0.1:$PORT" | tee -a "$dir/runs"
	else
		run ipfix --ipfix "127.0.0.1:$PORT" | tee -a "$dir/runs"
		run none | tee -a "$dir/runs"
	fi
done
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
none=$(awk '$1=="none"{print $2}' "$dir/runs" | median)
ipfix=$(awk '$1=="ipfix"{print $2}' "$dir/runs" | median)
paired=$(paste <(awk '$1=="none"{print $2}' "$dir/runs") <(awk '$1=="ipfix"{print $2}' "$dir/runs") | awk '{print $2/$1}' | median)
echo "median wall: none ${none}s, ipfix ${ipfix}s, ratio $(echo "scale=3; $ipfix / $none" | bc), median paired ratio $paired"
kill "$nfpid"
wait "$nfpid" 2>/dev/null || true
nfpid=
echo "nfcapd: $(grep -E 'Ident|Sequence' "$dir/nfcapd.log" | tail -1)"
