#!/usr/bin/env bash
# Replays the same traces with two flowmon binaries and compares what
# they write: the replay summary (--json, less its timings), the flow
# records (--flows-out) and the alerts (--alerts-out), byte for byte.
# A change that should not change behaviour (moving code, a new encoder)
# is checked with it against the binary built before the change.
#
#   scripts/compare-outputs.sh OLD_BIN NEW_BIN [TRACE...]
#
# Traces: the files named, or by default the generated bench traces
# eth.pcap, raw64.pcap and flood.pcap in $BENCH_DIR (scripts/bench-replay.sh
# makes them; missing ones are skipped, saying so) and every capture of
# ../shared/pcaps/real with at least $MIN_PACKETS packets (MANIFEST.tsv).
# Each trace runs with one worker and with the default workers. With two
# or more workers, which packet crosses a counting rule's threshold
# depends on how the shards interleave, so alerts are compared only with
# one worker; the summary and the records with both. Alerts resolved at
# the same window end leave the manager in no fixed order, so alert lines
# are compared sorted. COMPARE_WITHOUT_COMMUNITY_ID=1 compares the flow
# records less their community_id (against a binary that had none).
#
# Environment: BENCH_DIR (default /tmp/flowmon-bench), MIN_PACKETS (50),
# SHARED (../shared beside the checkout), KEEP=1 keeps the outputs.
# Exit status 0 when every output is identical, 1 when any differs.
set -uo pipefail
die() { echo "compare-outputs: $*" >&2; exit 2; }
[ $# -ge 2 ] || die "usage: $0 OLD_BIN NEW_BIN [TRACE...]"
old=$1 new=$2
shift 2
[ -x "$old" ] || die "$old: not an executable"
[ -x "$new" ] || die "$new: not an executable"
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SHARED:-$root/../shared}
bench=${BENCH_DIR:-/tmp/flowmon-bench}
min=${MIN_PACKETS:-50}

traces=("$@")
if [ ${#traces[@]} -eq 0 ]; then
	for t in eth raw64 flood; do
		if [ -f "$bench/$t.pcap" ]; then
			traces+=("$bench/$t.pcap")
		else
			echo "compare-outputs: $bench/$t.pcap missing, skipped" >&2
		fi
	done
	manifest=$shared/pcaps/real/MANIFEST.tsv
	if [ -f "$manifest" ]; then
		while IFS= read -r f; do
			traces+=("$shared/pcaps/real/$f")
		done < <(awk -F'\t' -v min="$min" 'NR>1 && $6=="capture" && $9+0>=min {print $1}' "$manifest")
	else
		echo "compare-outputs: $manifest missing, real captures skipped" >&2
	fi
fi

tmp=$(mktemp -d)
[ "${KEEP:-}" = 1 ] || trap 'rm -rf "$tmp"' EXIT
# The summary's fields that measure the run, not the trace.
strip() { grep -v -e '"run_seconds"' -e '"packets_per_second"' "$1"; }

run() { # BIN OUTDIR TRACE WORKERS
	mkdir -p "$2"
	"$1" replay --json --workers "$4" --flows-out "$2/flows" --alerts-out "$2/alerts" "$3" \
		>"$2/summary.raw" 2>"$2/stderr"
	echo $? >"$2/status"
	python3 -m json.tool --sort-keys "$2/summary.raw" >"$2/summary.json" 2>/dev/null ||
		cp "$2/summary.raw" "$2/summary.json"
}

n=0 differ=0 records=0
workers_default=$(nproc)
for t in "${traces[@]}"; do
	for w in 1 "$workers_default"; do
		d=$tmp/$n
		n=$((n + 1))
		run "$old" "$d/old" "$t" "$w"
		run "$new" "$d/new" "$t" "$w"
		bad=()
		cmp -s "$d/old/status" "$d/new/status" || bad+=(status)
		cmp -s <(strip "$d/old/summary.json") <(strip "$d/new/summary.json") || bad+=(summary)
		if [ "${COMPARE_WITHOUT_COMMUNITY_ID:-}" = 1 ]; then
			cmp -s <(sed 's/,"community_id":"[^"]*"//' "$d/old/flows") <(sed 's/,"community_id":"[^"]*"//' "$d/new/flows") || bad+=(flows)
		else
			cmp -s "$d/old/flows" "$d/new/flows" || bad+=(flows)
		fi
		if [ "$w" = 1 ]; then
			cmp -s <(sort "$d/old/alerts") <(sort "$d/new/alerts") || bad+=(alerts)
		fi
		records=$((records + $(wc -l <"$d/new/flows")))
		if [ ${#bad[@]} -gt 0 ]; then
			differ=$((differ + 1))
			echo "DIFFERS ($w workers, ${bad[*]}): $t   [$d]"
		fi
	done
done
echo "compare-outputs: $n runs of ${#traces[@]} traces, $records flow records; $differ differ"
[ "$differ" = 0 ]
