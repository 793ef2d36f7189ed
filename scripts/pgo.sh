#!/usr/bin/env bash
# Refresh cmd/flowmon/default.pgo, the CPU profile `go build` (and `go
# run`) optimize flowmon with: profile-guided optimization inlines the
# calls the profile finds hot and calls the one type an interface call
# site meets there directly. docs/results/pipeline.md has what it gave.
#
# The profile is of replays with the defaults and with --workers 1 on three
# traces made here with `flowmon gen`: an Ethernet trace, a raw 64-byte
# one and a SYN flood, a quarter of the size of make bench-replay's and
# from other seeds, so that the benchmark does not replay the files the
# build was tuned on, and of the Ethernet trace's replay writing its flow
# records. Run it after the packet path changes much, or moves: a stale
# profile still helps (Go matches it to the code by package and function
# name), only less, and not at all for code that moved to another package.
#
# Usage: scripts/pgo.sh            (PGO_DIR=DIR keeps the traces in DIR)
set -euo pipefail

die() { echo "pgo: $*" >&2; exit 1; }
root=$(cd "$(dirname "$0")/.." && pwd)
go=${GO:-go}
tmp=$(mktemp -d /tmp/flowmon-pgo.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
dir=${PGO_DIR:-$tmp}
mkdir -p "$dir"

# The profile is of flowmon as the code is, not as the last profile
# optimized it.
bin=$tmp/flowmon
(cd "$root" && "$go" build -pgo=off -o "$bin" ./cmd/flowmon) || die "build failed"

declare -A gen_args=(
	[eth]="--flows 50000 --dup-rate 0.02 --seed 101"
	[raw64]="--packets 2500000 --link raw --snaplen 64 --seed 101"
	[flood]="--flows 750250 --mix normal=0.000333,synflood=0.999667 --duration 15s --seed 111"
)
profiles=()
for t in eth raw64 flood; do
	f=$dir/$t.pcap
	if [ ! -s "$f" ]; then
		echo "pgo: flowmon gen -o $f ${gen_args[$t]}" >&2
		# shellcheck disable=SC2086 # the options are words
		"$bin" gen -o "$f" ${gen_args[$t]} >/dev/null
	fi
	for w in 2 1; do
		p=$tmp/$t-$w.prof
		"$bin" replay --no-progress --json --workers "$w" --cpuprofile "$p" "$f" >/dev/null 2>&1 ||
			die "replay of $f with $w workers failed"
		profiles+=("$p")
	done
	if [ "$t" = eth ]; then
		# The replay writing its flow records (conn.log lines) too.
		p=$tmp/$t-records.prof
		"$bin" replay --no-progress --json --flows-out "$tmp/flows.jsonl" --cpuprofile "$p" "$f" >/dev/null 2>&1 ||
			die "replay of $f with flow records failed"
		profiles+=("$p")
	fi
done
"$go" tool pprof -proto "${profiles[@]}" >"$tmp/merged.pgo" 2>/dev/null || die "merging the profiles failed"
mv "$tmp/merged.pgo" "$root/cmd/flowmon/default.pgo"
echo "pgo: wrote cmd/flowmon/default.pgo ($(stat -c %s "$root/cmd/flowmon/default.pgo") bytes)" >&2
