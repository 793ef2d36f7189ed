#!/usr/bin/env bash
# Regenerates the paper tables under docs/results/ (make eval). Long: the
# kbf table inserts 1M keys per configuration, the acsm run replays a
# 908,522-flow trace. N_KBF and FLOWS_ACSM override the sizes.
#
# kbf.md, fbf.md and ccf.md are each one command's output. acsm.md gathers
# several runs with commentary; this script regenerates its first table
# (the gen trace) as acsm-gen.md, and acsm.md lists the other commands.
set -euo pipefail
bin=${1:-bin/flowmon}
out=docs/results
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$bin" eval kbf -q -n "${N_KBF:-1000000}" -o "$out/kbf.md"
"$bin" eval fbf -trials 200000 -seed 1 > "$out/fbf.md"
"$bin" eval ccf -trials 3 > "$out/ccf.md"
"$bin" eval scbf -trials 1000000 -seed 1 -o "$out/scbf.md"
"$bin" eval qf -o "$out/qf.md"
# About 3-4 minutes: a Cascade Filter and a Bloom filter on this machine's disk (-dir DIR for another).
"$bin" eval cascade -o "$out/cascade.md"
# The default rules on gen traces, and on the real captures when they are beside the checkout.
caps=../shared/pcaps/real
[ -f "$caps/MANIFEST.tsv" ] && "$bin" eval rules --captures "$caps" -o "$out/rules.md" || "$bin" eval rules -o "$out/rules.md"

"$bin" gen -o "$tmp/big.pcap" -flows "${FLOWS_ACSM:-908522}" -seed 2006 -snaplen 96 -duration 1h >/dev/null
"$bin" eval acsm -q --truth "$tmp/big.truth.jsonl" "$tmp/big.pcap" > "$out/acsm-gen.md"
