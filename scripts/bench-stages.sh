#!/usr/bin/env bash
# What each stage of a one-worker replay costs per packet, and whether the
# stages add up to the whole replay's CPU time: the "Per-stage costs"
# section of docs/benchmarks.md.
#
#   scripts/bench-stages.sh [BIN]      (make bench-stages; BIN: bin/flowmon)
#
# The trace is bench-replay.sh's "eth" (flowmon gen --flows 200000
# --dup-rate 0.02 --seed 7: Ethernet, 2% SPAN duplicates, about 3.8M
# packets, 2.7 GB). Each round runs, in turn:
#   - the whole replay, `BIN replay --no-progress --json --workers 1
#     --flows-out FILE TRACE` (the default rules, the flow records),
#     timed by GNU time: its user + system seconds over the packets;
#   - pipeline's BenchmarkStages on the same trace (-benchtime 1x), built
#     with the profile BIN is built with (cmd/flowmon/default.pgo): each
#     stage's code run alone over each batch of packets and timed on the
#     thread's CPU clock (pipeline/stages_bench_test.go says how).
# The table has the medians over the rounds. The stages' sum is held
# against the whole: the check passes within 10%.
#
# Environment:
#   ROUNDS=5          rounds
#   FLOWS=200000      the trace's flows (fewer: a smaller trace, same flags)
#   BENCH_DIR=DIR     the trace in DIR: one already there is used as it is
#                     and kept; one made here is deleted unless KEEP=1.
#                     Default: a new dir under /tmp.
#   OUT=FILE          where the section goes (default docs/benchmarks.md:
#                     its "## Per-stage costs" section is replaced, or added
#                     at the end); OUT=- prints it only
set -euo pipefail

die() { echo "bench-stages: $*" >&2; exit 1; }
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-bin/flowmon}
[ -x "$bin" ] || die "$bin: no such executable (make build makes it)"
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
rounds=${ROUNDS:-5}
case $rounds in '' | *[!0-9]* | 0) die "ROUNDS=$rounds: must be a whole number, 1 or more" ;; esac
flows=${FLOWS:-200000}
case $flows in '' | *[!0-9]* | 0) die "FLOWS=$flows: must be a whole number, 1 or more" ;; esac
out=${OUT:-$root/docs/benchmarks.md}
[ -x /usr/bin/time ] || die "/usr/bin/time (GNU time) is missing: apt-get install time"
GO=${GO:-go}

if [ -n "${BENCH_DIR:-}" ]; then
	dir=$BENCH_DIR
	mkdir -p "$dir"
	own_dir=0
else
	dir=$(mktemp -d /tmp/bench-stages.XXXXXX)
	own_dir=1
fi
dir=$(cd "$dir" && pwd)
work=$(mktemp -d "$dir/run.XXXXXX")
gen_args="--flows $flows --dup-rate 0.02 --seed 7"
trace=$dir/eth-$flows.pcap
made=()
cleanup() {
	rm -rf "$work"
	[ "${KEEP:-0}" = 1 ] || [ ${#made[@]} -eq 0 ] || rm -f "${made[@]}"
	[ "${KEEP:-0}" = 1 ] || [ "$own_dir" = 0 ] || rm -rf "$dir"
}
trap cleanup EXIT

if [ -s "$trace" ]; then
	echo "bench-stages: using $trace as it is" >&2
else
	# About 13.3 KB a flow (the trace and its ground truth).
	need=$((flows * 13300 + 200000000))
	avail=$(df -B1 --output=avail "$dir" | tail -1 | tr -d ' ')
	[ "$avail" -ge "$need" ] || die "$dir: $((avail / 1000000)) MB free, $((need / 1000000)) MB needed; set FLOWS lower or BENCH_DIR"
	echo "bench-stages: $bin gen -o $trace $gen_args" >&2
	made+=("$trace" "${trace%.pcap}.truth.jsonl")
	# shellcheck disable=SC2086 # the options are words
	"$bin" gen -o "$trace" $gen_args >&2
fi
cat "$trace" >/dev/null # into the page cache

echo "bench-stages: building the pipeline's test binary" >&2
(cd "$root" && "$GO" test -c -pgo="$root/cmd/flowmon/default.pgo" -o "$work/pipeline.test" ./pipeline)

for r in $(seq "$rounds"); do
	echo "bench-stages: round $r of $rounds" >&2
	rm -f "$work/flows.jsonl"
	/usr/bin/time -f '%U %S' -o "$work/time" "$bin" replay --no-progress --json --workers 1 \
		--flows-out "$work/flows.jsonl" "$trace" >"$work/whole.json" 2>"$work/whole.err" ||
		die "the replay failed: $(cat "$work/whole.err")"
	pk=$(sed -n 's/^{.*"packets":\([0-9]*\).*/\1/p' "$work/whole.json" | head -1)
	[ -n "$pk" ] || die "no packet count in the replay's --json summary"
	echo "whole $pk $(cat "$work/time")" >>"$work/runs"
	(cd "$root/pipeline" && FLOWMON_STAGES_PCAP=$trace "$work/pipeline.test" -test.run '^$' \
		-test.bench '^BenchmarkStages$' -test.benchtime 1x -test.count 1) >>"$work/bench.txt" ||
		die "BenchmarkStages failed: $(tail -5 "$work/bench.txt")"
done

pkts=$(awk '$1 == "whole" {print $2; exit}' "$work/runs")
table=$work/table
awk -v pkts="$pkts" -v rounds="$rounds" '
function sortv(a, n,   i, j, x) { for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x } }
function median(k,   n, i, a) { n = cnt[k]; if (!n) return ""; for (i = 1; i <= n; i++) a[i] = val[k, i]; sortv(a, n); return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
function add(k, v) { val[k, ++cnt[k]] = v }
function f1(x) { return sprintf("%.1f", x) }
$1 == "whole" { add("whole", ($3 + $4) * 1e9 / $2); next }
/^BenchmarkStages\// {
	split($1, nm, "/"); sub(/-[0-9]+$/, "", nm[2]); v = nm[2]
	if ($0 !~ / pkts/) next
	if (v == "read") r++
	for (i = 2; i < NF; i++) if ($(i + 1) ~ /-ns\/pkt$/ || $(i + 1) == "pkts") {
		u = $(i + 1); sub(/-ns\/pkt$/, "", u); add(v SUBSEP u, $i)
		if (u == "flowstate") fs[v, r] = $i
	}
}
END {
	w = median("whole")
	rd = median("read" SUBSEP "read")
	split("setup decode dedup handoff flowstate rotate rules records finish", S, " ")
	for (i in S) m[S[i]] = median("all" SUBSEP S[i])
	# The splits are differences within a round (its three runs follow
	# each other), then their median: a paired difference shares the
	# machine'"'"'s drift, which moves the flow state by more than either
	# split between rounds.
	for (i = 1; i <= r; i++) if ((("all", i) in fs) && (("counter=off", i) in fs) && (("counter=off,records=off", i) in fs)) {
		add("dcounter", fs["all", i] - fs["counter=off", i]); add("drecords", fs["counter=off", i] - fs["counter=off,records=off", i])
	}
	dc = median("dcounter"); dr = median("drecords")
	fs0 = m["flowstate"] - dc - dr
	sum = rd
	for (i in S) sum += m[S[i]]
	print "| stage | what runs | ns/packet | share of the sum |"
	print "| --- | --- | ---: | ---: |"
	row("reading", "`capture.Reader.NextFrame` over the file: read(2) into the 256 KiB buffer, the record headers", rd)
	row("decoding", "`capture.Decode` and the reader'"'"'s counts", m["decode"])
	row("dedup", "the fingerprint (`dedup.Fingerprint`) and the duplicate window'"'"'s check (`CheckPrint`)", m["dedup"])
	row("hand-off", "each packet copied into the shard'"'"'s batch (`batch.add`)", m["handoff"])
	row("flow state", "the ACSM (`ObserveInto`) and the flow table'"'"'s slot (`flowtable.Table.Packet`), with shard.run'"'"'s prefetches: measured with the counts and records'"'"' fields below, " f1(m["flowstate"]) ", less their splits", fs0)
	row("flow counter", "the flow table'"'"'s window counts into the counter (flow state with them less without, paired by round: " f1(dc) ", min-max " spread("dcounter") ") and the window ends (`rotate`, measured: " f1(m["rotate"]) ")", dc + m["rotate"])
	row("rules", "the default rules (`rules.Shard.Packet`, and `Duplicate` for the copies)", m["rules"])
	row("records", "the record'"'"'s fields in the flow table (flow state with records less without, paired by round: " f1(dr) ", min-max " spread("drecords") "), then the conn.log encoding and its writes to a file (measured: " f1(m["records"]) ")", dr + m["records"])
	row("setup and finish", "building the stages; at the end, the open flows'"'"' records and the last flushes", m["setup"] + m["finish"])
	printf "| **sum of the stages** | | **%s** | 100%% |\n", f1(sum)
	printf "| **whole replay** | user + system seconds of the process over its %d packets | **%s** | %.0f%% |\n", pkts, f1(w), 100 * w / sum
	print ""
	d = (sum - w) / w
	printf "Check: the stages sum to %s ns a packet, the whole replay takes %s: the sum is %+.1f%% of the whole, %s 10%%.\n", f1(sum), f1(w), 100 * d, (d <= 0.1 && d >= -0.1) ? "within" : "NOT within"
	printf "Medians of %d rounds; per round the whole replay took %s ns a packet (min-max), the stages'"'"' flow state %s.\n", rounds, spread("whole"), spread("all" SUBSEP "flowstate")
}
function row(name, what, v) { printf "| %s | %s | %s | %.0f%% |\n", name, what, f1(v), 100 * v / sum }
function spread(k,   n, i, a) { n = cnt[k]; for (i = 1; i <= n; i++) a[i] = val[k, i]; sortv(a, n); return f1(a[1]) "-" f1(a[n]) }
' "$work/runs" "$work/bench.txt" >"$table"

commit=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
section=$work/section
{
	echo "## Per-stage costs"
	echo
	echo "What each stage of a one-worker replay costs a packet, on the \"eth\" trace"
	echo "(\`flowmon gen -o eth.pcap $gen_args\`, $pkts packets), and the whole"
	echo "replay's CPU time beside their sum. Made by \`make bench-stages\`"
	echo "(scripts/bench-stages.sh), which rewrites this section; $(date -u '+%Y-%m-%d %H:%M UTC'),"
	echo "commit $commit, $(nproc) CPUs shared with other work (load average"
	echo "$(cut -d' ' -f1-3 /proc/loadavg) at the end)."
	echo
	echo "The whole replay is \`flowmon replay --no-progress --json --workers 1 --flows-out FILE eth.pcap\`"
	echo "(the default rules, conn.log records to a file), timed by GNU time. The stages are"
	echo "pipeline's \`BenchmarkStages\` on the same trace: each stage's own code runs alone over"
	echo "each batch of 1024 packets, in the order the shard runs them, and is timed on the"
	echo "thread's CPU clock, so each figure is measured on its own and their sum can disagree"
	echo "with the whole. Two splits are differences of two such runs: the flow counter's"
	echo "window counts and the records' fields are written by the flow table as it counts a"
	echo "packet, so the flow state is measured with them, without the counter's, and without"
	echo "either; the sum uses the measured whole of it."
	echo
	cat "$table"
	echo
	echo "Not in the stages: the process's start, the Go runtime's own threads (the collector),"
	echo "the records' delivery goroutine's hand-over and the feed loop's bookkeeping."
}>"$section"
cat "$section"
if [ "$out" != - ]; then
	after=$(mktemp)
	new=$(mktemp)
	[ -f "$out" ] && awk '/^## / {in_sec = ($0 == "## Per-stage costs"); if (!in_sec && seen) keep = 1} /^## Per-stage costs$/ {seen = 1} keep' "$out" >"$after"
	{
		if grep -q '^## Per-stage costs$' "$out" 2>/dev/null; then
			sed '/^## Per-stage costs$/,$d' "$out"
		elif [ -f "$out" ]; then
			cat "$out"
			echo
		fi
		cat "$section"
		if [ -s "$after" ]; then
			echo
			cat "$after"
		fi
	} >"$new"
	mv "$new" "$out"
	rm -f "$after"
	echo "bench-stages: wrote the section into $out" >&2
fi
