#!/usr/bin/env bash
# Regenerates the paper tables under docs/results/ (make eval). Long: the
# kbf table alone inserts 1M keys per configuration; the acsm table replays
# a generated trace of ~1M flows. N_KBF, FLOWS_ACSM override the sizes.
set -euo pipefail
bin=${1:-bin/flowmon}
out=docs/results
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$bin" eval kbf -q -n "${N_KBF:-1000000}" -out "$out/kbf.md"
"$bin" eval fbf > "$out/fbf.md"
"$bin" eval ccf -trials 3 > "$out/ccf.md"

# Section VI of the kBF paper: at least the paper's 908,522 flows.
"$bin" gen -o "$tmp/acsm.pcap" --flows "${FLOWS_ACSM:-910000}" --duration 300s --seed 11 --snaplen 64 >/dev/null
"$bin" eval acsm -q --truth "$tmp/acsm.truth.jsonl" "$tmp/acsm.pcap" > "$out/acsm-gen.md"
