#!/usr/bin/env bash
# Live capture throughput of flowmon run on a veth pair, beside the
# sender's own rate, and flowmon's CPU per packet for each source
# (make bench-live; as root).
#
#   scripts/bench-live.sh [BIN] [PCAP_BIN]
#
# BIN (default bin/flowmon) is flowmon; PCAP_BIN (default
# bin/flowmon-pcap) the same built with -tags pcap, for the libpcap
# source (skipped when absent). A namespace of its own holds a veth pair
# (deleted at exit, failed or not); tcpreplay --topspeed -K (the trace
# preloaded in memory, its fastest) sends a trace
# into one end, flowmon run captures on the other. Two traces: "syn", 64-
# byte random-source SYNs (the most packets a second a sender makes), and
# "mix", flowmon gen's default mix of full-size packets. For each, the
# sender alone (nothing capturing: its own ceiling), then flowmon with
# afpacket and 1 and 2 workers, pcap, and the eBPF program at xdp and at
# tc with 1 worker, in turn within each round, so every source meets the
# same machine. Captured packets/s is the packets flowmon processed over
# the sender's elapsed time (the capture cannot finish before the
# sender); kernel drops are the kernel's count of packets the rings had
# no room for (for xdp and tc: the records the program could not write,
# its lost_records). CPU per packet is flowmon's user and system time
# (utime and stime of /proc/PID/stat, from the start line to the stop),
# over the packets it processed; the kernel's receive path and the eBPF
# program run in the sender's softirq and are not in it. The machine has
# two cores shared by sender and capture: when flowmon drops nothing it
# kept up with the sender, and the sender was the limit.
#
# Then the kernel flow state (pipeline.flow-state kernel) against
# afpacket on "flows", a flowmon gen trace of KFLOWS flows (the default
# mix without its heavy flows, so that the trace fits in memory for
# tcpreplay -K), sent once a run: flowmon's user CPU per packet sent, and
# the machine's for the capture: flowmon's and the interrupts' and
# softirqs' (/proc/stat, sampled at the tick on every core, where the
# receive path and the eBPF programs run) from the send to a second
# after it, less the sender alone's interrupts and softirqs. The
# sender's own time and other processes stay out of it. That table goes
# to stdout, and to KOUT when set.
#
# Environment: ROUNDS=3, LOOPS=5 (times tcpreplay sends a trace in one
# run), OUT=FILE (default docs/benchmarks.md: its "## Live capture"
# section is replaced, the sections after it kept; make bench-replay
# keeps it), PARTS="capture kstate" (the parts to run), KFLOWS=200000,
# KOUT=FILE (where the kernel state's table also goes, with how it was
# made; docs/results/bpf.md holds it, "Kernel flow state, live").
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-bin/flowmon}
PCAP_BIN=${2:-bin/flowmon-pcap}
ROUNDS=${ROUNDS:-3}
LOOPS=${LOOPS:-5}
PARTS=${PARTS:-capture kstate}
KFLOWS=${KFLOWS:-200000}
KOUT=${KOUT:-}
[ "$(id -u)" = 0 ] || { echo "bench-live: needs root (network namespaces, AF_PACKET)" >&2; exit 1; }
command -v tcpreplay >/dev/null || { echo "bench-live: needs tcpreplay (scripts/install-deps.sh test)" >&2; exit 1; }

ns=flowmon-bench-$$
a=fmb$$a
b=fmb$$b
dir=$(mktemp -d)
cleanup() {
	ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
	ip -n "$ns" link del "$a" 2>/dev/null || true
	ip netns del "$ns" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
ip netns add "$ns"
ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 net.ipv6.conf.all.disable_ipv6=1
ip -n "$ns" link add "$a" type veth peer name "$b"
ip -n "$ns" link set "$a" up
ip -n "$ns" link set "$b" up
ip -n "$ns" link set lo up


# send TRACE: tcpreplay's packets and elapsed seconds, and its CPU time
# (user and system, bash's times of the subshell's children, in ns),
# "N SECS CPU_NS".
send() {
	local t
	t=$( (ip netns exec "$ns" tcpreplay -q -K -i "$a" --topspeed --loop "$LOOPS" "$1" >"$dir/send.txt" 2>&1; times) | tail -1)
	grep -q "Actual:" "$dir/send.txt" || cat "$dir/send.txt" >&2
	echo "$(sed -n 's/.*Actual: \([0-9]*\) packets ([0-9]* bytes) sent in \([0-9.]*\) seconds.*/\1 \2/p' "$dir/send.txt") $(python3 -c '
import re, sys
print(int(sum(float(m) * 60 + float(s) for m, s in re.findall(r"(\d+)m([0-9.]+)s", sys.argv[1])) * 1e9))' "$t")"
}

hz=$(getconf CLK_TCK)
# cputicks PID: the process's user and system time in clock ticks, "U S".
cputicks() { awk '{print $14, $15}' "/proc/$1/stat"; }

# irqticks: the time every core spent in interrupts and softirqs (irq
# and softirq of /proc/stat's cpu line; sampled at the tick, wherever
# they ran), in clock ticks: the kernel's receive path, with the eBPF
# program and the AF_PACKET copy in it. The machine's CPU for the
# capture is this and flowmon's own time, less the sender alone's
# interrupts: the sender's own time is the same with and without a
# capture (tcpreplay -K's loading of the trace makes it the noisiest
# part), and other processes on the machine stay out of it.
irqticks() { awk '$1 == "cpu" {print $7 + $8}' /proc/stat; }

# sendbusy TRACE: the sender alone, "N SECS IRQ_NS": the interrupts' and
# softirqs' time from the send to a second after it.
sendbusy() {
	local q0 q1 n s c
	q0=$(irqticks)
	read -r n s c <<<"$(send "$1")"
	sleep 1
	q1=$(irqticks)
	echo "$n $s $(((q1 - q0) * 1000000000 / hz))"
}

# The kernel flow state's runs take its config (flow-state kernel needs
# its source in the same file).
for s in xdp tc; do printf 'source: %s\npipeline:\n  flow-state: kernel\n' "$s" >"$dir/kstate-$s.yaml"; done

# capture BIN SOURCE WORKERS TRACE [ARGS...]: "SENT SECS PACKETS KERNEL
# DROPS USER_NS SYS_NS MACHINE_NS", USER_NS and SYS_NS flowmon's CPU time
# while it captured, MACHINE_NS that and the interrupts' and softirqs'
# from the send to a second after it (sendbusy's window). ARGS go to
# flowmon run.
capture() {
	local bin=$1 source=$2 workers=$3 trace=$4 out=$dir/out.json err=$dir/err.txt
	shift 4
	ip netns exec "$ns" "$bin" run --iface "$b" --source "$source" --workers "$workers" --json \
		--rules none --listen 127.0.0.1:0 --no-status "$@" >"$out" 2>"$err" &
	local pid=$!
	for _ in $(seq 300); do grep -q "capturing on" "$err" && break; sleep 0.1; done
	grep -q "capturing on" "$err" || { cat "$err" >&2; kill "$pid"; return 1; }
	local n secs c u0 s0 u1 s1 q0 q1
	read -r u0 s0 <<<"$(cputicks "$pid")"
	q0=$(irqticks)
	read -r n secs c <<<"$(send "$trace")"
	sleep 1
	q1=$(irqticks)
	read -r u1 s1 <<<"$(cputicks "$pid")"
	kill -TERM "$pid"
	wait "$pid" || cat "$err" >&2
	python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); k=s.get("kernel_state"); k and print("kernel state:", json.dumps(k), file=sys.stderr)' "$out"
	echo "$n $secs $(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["packets"], s.get("kernel_packets",0), s.get("kernel_drops",0))' "$out") $(((u1 - u0) * 1000000000 / hz)) $(((s1 - s0) * 1000000000 / hz)) $(((u1 - u0 + s1 - s0 + q1 - q0) * 1000000000 / hz))"
}

# The sources' capture benchmark, into OUT's "## Live capture".
capture_part() {
"$BIN" gen -o "$dir/syn.pcap" --flows 200000 --duration 2s --mix synflood=1 --seed 21 >/dev/null
"$BIN" gen -o "$dir/mix.pcap" --flows 20000 --duration 5s --seed 22 >/dev/null
table=$dir/table.md
{
	echo "| trace | what | runs | sent packets | sender's rate (Mpps) | captured (Mpps) | kernel drops | user CPU (ns/pkt) | system CPU (ns/pkt) |"
	echo "|---|---|---|---|---|---|---|---|---|"
} >"$table"
for trace in syn mix; do
	declare -A rate=() capt=() drops=() sentn=() ucpu=() scpu=()
	modes=("sender alone" "afpacket, 1 worker" "afpacket, 2 workers")
	[ -x "$PCAP_BIN" ] && modes+=("pcap")
	modes+=("xdp, 1 worker" "tc, 1 worker")
	for round in $(seq "$ROUNDS"); do
		for mode in "${modes[@]}"; do
			case $mode in
			"sender alone") read -r n s _ <<<"$(send "$dir/$trace.pcap")"; p=0; k=0; d=0; u=0; y=0 ;;
			"afpacket, 1 worker") read -r n s p k d u y _ <<<"$(capture "$BIN" afpacket 1 "$dir/$trace.pcap")" ;;
			"afpacket, 2 workers") read -r n s p k d u y _ <<<"$(capture "$BIN" afpacket 2 "$dir/$trace.pcap")" ;;
			pcap) read -r n s p k d u y _ <<<"$(capture "$PCAP_BIN" pcap 1 "$dir/$trace.pcap")" ;;
			"xdp, 1 worker") read -r n s p k d u y _ <<<"$(capture "$BIN" xdp 1 "$dir/$trace.pcap")" ;;
			"tc, 1 worker") read -r n s p k d u y _ <<<"$(capture "$BIN" tc 1 "$dir/$trace.pcap")" ;;
			esac
			rate[$mode]+="$(python3 -c "print($n/$s/1e6)") "
			capt[$mode]+="$(python3 -c "print($p/$s/1e6)") "
			drops[$mode]+="$d "
			ucpu[$mode]+="$(python3 -c "print($u/max($p,1))") "
			scpu[$mode]+="$(python3 -c "print($y/max($p,1))") "
			sentn[$mode]=$n
			echo "round $round $trace $mode: sent $n in ${s}s, flowmon $p packets, kernel $k, drops $d, cpu user ${u} ns sys ${y} ns" >&2
		done
	done
	for mode in "${modes[@]}"; do
		r=$(tr ' ' '\n' <<<"${rate[$mode]}" | grep . | median)
		c=$(tr ' ' '\n' <<<"${capt[$mode]}" | grep . | median)
		d=$(tr ' ' '\n' <<<"${drops[$mode]}" | grep . | median)
		dmax=$(tr ' ' '\n' <<<"${drops[$mode]}" | grep . | sort -g | tail -1)
		uc=$(tr ' ' '\n' <<<"${ucpu[$mode]}" | grep . | median)
		sc=$(tr ' ' '\n' <<<"${scpu[$mode]}" | grep . | median)
		[ "$dmax" != "$d" ] && d="$d (max $dmax)"
		if [ "$mode" = "sender alone" ]; then
			c=- d=- uc=- sc=-
		else
			c=$(printf '%.2f' "$c") uc=$(printf '%.0f' "$uc") sc=$(printf '%.0f' "$sc")
		fi
		printf '| %s | %s | %d | %d | %.2f | %s | %s | %s | %s |\n' "$trace" "$mode" "$ROUNDS" "${sentn[$mode]}" "$r" \
			"$c" "$d" "$uc" "$sc" >>"$table"
	done
	unset rate capt drops sentn ucpu scpu
done
cat "$table"
out=${OUT:-docs/benchmarks.md}
# The report's own section replaces the last one; the sections after it
# (the IPFIX export's) stay.
after=$(mktemp)
[ -f "$out" ] && awk '/^## / {in_live = ($0 == "## Live capture"); if (!in_live && seen) keep = 1} /^## Live capture$/ {seen = 1} keep' "$out" >"$after"
{
	[ -f "$out" ] && sed '/^## Live capture/,$d' "$out"
	echo "## Live capture"
	echo
	echo "\`flowmon run\` on one end of a veth pair in a network namespace, \`tcpreplay --topspeed -K\` sending"
	echo "into the other (make bench-live, scripts/bench-live.sh; $(date -u '+%Y-%m-%d %H:%M UTC'), commit"
	echo "$(git describe --always --dirty), load average $(cut -d' ' -f1-3 /proc/loadavg) at the end)."
	echo "\"syn\": 200,000 64-byte random-source SYNs, \"mix\": flowmon gen's default mix of full-size"
	echo "packets; each sent $LOOPS times a run. Captured packets/s is what flowmon processed over the"
	echo "sender's time; kernel drops are the packets the rings had no room for (PACKET_STATISTICS,"
	echo "libpcap's ps_drop; for xdp and tc the records the program could not write, its lost_records)."
	echo "CPU per packet is flowmon's user and system time from /proc/PID/stat (utime, stime) between"
	echo "its start line and its stop, over the packets it processed; the kernel's receive path, the"
	echo "copy into an AF_PACKET ring and the eBPF program run in the sender's softirq and are not in"
	echo "it. Medians of $ROUNDS runs (and the largest drop count when it differs); the sources take turns"
	echo "within each round."
	echo
	cat "$table"
	echo
	echo "On this 2-CPU machine the sender is the limit: alone it makes the rate in its row, beside a"
	echo "capturing flowmon (which shares the two CPUs) a little less. Where a run dropped, the sender,"
	echo "flowmon and the other work on the machine were sharing two CPUs, and the kernel's count says"
	echo "so. flowmon's own ceiling is higher than any rate measured here (the replay of the same"
	echo "pipeline runs at the rates above); a faster sender, or a machine with more cores, is needed to"
	echo "find it. The CPU columns are what the sources cost flowmon for each packet at these rates;"
	echo "docs/results/bpf.md compares xdp's with afpacket's."
	if [ -s "$after" ]; then
		echo
		cat "$after"
	fi
} >"$out.tmp"
rm -f "$after"
mv "$out.tmp" "$out"
echo "bench-live: wrote $out" >&2
}

# The kernel flow state against afpacket on the flows trace.
kstate_part() {
	"$BIN" gen -o "$dir/flows.pcap" --flows "$KFLOWS" --duration 5s --mix normal=0.98,synflood=0.01,scan=0.01 --seed 23 >/dev/null
	local trace=$dir/flows.pcap LOOPS=1 mode n s p k d u y m el
	local modes=("sender alone" "afpacket, 1 worker" "xdp, 1 worker" "xdp, kernel state" "tc, kernel state")
	declare -A ucpu=() scpu=() mcpu=() sentn=() drops=() lost=()
	for round in $(seq "$ROUNDS"); do
		for mode in "${modes[@]}"; do
			el=0 n= m=
			case $mode in
			"sender alone") read -r n s m <<<"$(sendbusy "$trace")"; u=0; y=0; d=0 ;;
			"afpacket, 1 worker") read -r n s p k d u y m <<<"$(capture "$BIN" afpacket 1 "$trace")" ;;
			"xdp, 1 worker") read -r n s p k d u y m <<<"$(capture "$BIN" xdp 1 "$trace")" ;;
			"xdp, kernel state") read -r n s p k d u y m <<<"$(capture "$BIN" xdp 1 "$trace" --config "$dir/kstate-xdp.yaml")" ;;
			"tc, kernel state") read -r n s p k d u y m <<<"$(capture "$BIN" tc 1 "$trace" --config "$dir/kstate-tc.yaml")" ;;
			esac
			if [ -z "${n:-}" ] || [ -z "${m:-}" ]; then
				# A run that failed (its output said why above) counts for nothing.
				echo "round $round flows $mode: failed" >&2
				continue
			fi
			case $mode in *"kernel state") el=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["kernel_state"]["events_lost"])' "$dir/out.json") ;; esac
			ucpu[$mode]+="$(python3 -c "print($u/max($n,1))") "
			scpu[$mode]+="$(python3 -c "print($y/max($n,1))") "
			mcpu[$mode]+="$(python3 -c "print($m/max($n,1))") "
			drops[$mode]+="$d "
			lost[$mode]+="$el "
			sentn[$mode]=$n
			echo "round $round flows $mode: sent $n in ${s}s, flowmon user ${u} ns, system ${y} ns, machine ${m} ns, kernel drops $d, events lost $el" >&2
		done
	done
	local base afu afm uc sc mc dd ll runs ktable=$dir/ktable.md
	base=$(tr ' ' '\n' <<<"${mcpu["sender alone"]}" | grep . | median)
	afu=$(tr ' ' '\n' <<<"${ucpu["afpacket, 1 worker"]}" | grep . | median)
	afm=$(tr ' ' '\n' <<<"${mcpu["afpacket, 1 worker"]}" | grep . | median)
	afm=$(python3 -c "print($afm - $base)")
	{
		echo "| what | runs | sent packets | flowmon user CPU (ns/pkt) | ÷ afpacket | flowmon system CPU (ns/pkt) | interrupts and softirqs less the sender alone's (ns/pkt) | machine CPU less the sender alone (ns/pkt) | ÷ afpacket | kernel drops | events lost |"
		echo "|---|---|---|---|---|---|---|---|---|---|---|"
		for mode in "${modes[@]}"; do
			uc=$(tr ' ' '\n' <<<"${ucpu[$mode]}" | grep . | median)
			mc=$(tr ' ' '\n' <<<"${mcpu[$mode]}" | grep . | median)
			sc=$(tr ' ' '\n' <<<"${scpu[$mode]}" | grep . | median)
			dd=$(tr ' ' '\n' <<<"${drops[$mode]}" | grep . | median)
			ll=$(tr ' ' '\n' <<<"${lost[$mode]}" | grep . | median)
			runs=$(tr ' ' '\n' <<<"${mcpu[$mode]}" | grep -c .)
			if [ "$mode" = "sender alone" ]; then
				printf '| %s | %d | %d | - | - | - | %.0f (its own: the baseline) | - | - | - | - |\n' "$mode" "$runs" "${sentn[$mode]}" "$mc"
				continue
			fi
			printf '| %s | %d | %d | %.0f | %.3f | %.0f | %.0f | %.0f | %.2f | %s | %s |\n' "$mode" "$runs" "${sentn[$mode]}" "$uc" \
				"$(python3 -c "print($uc/max($afu,1e-9))")" "$sc" "$(python3 -c "print($mc-$uc-$sc-$base)")" "$(python3 -c "print($mc-$base)")" \
				"$(python3 -c "print(($mc-$base)/max($afm,1e-9))")" "$dd" "$ll"
		done
	} >"$ktable"
	cat "$ktable"
	{
		echo "Kernel flow state against afpacket: \`flowmon run\` on one end of a veth pair, \`tcpreplay --topspeed -K\`"
		echo "sending a $KFLOWS-flow flowmon gen trace once into the other (PARTS=kstate make bench-live,"
		echo "scripts/bench-live.sh; $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git describe --always --dirty), load average"
		echo "$(cut -d' ' -f1-3 /proc/loadavg) at the end). Medians of $ROUNDS runs; per packet sent."
		echo
		cat "$ktable"
	} >"${KOUT:-/dev/null}"
	[ -n "$KOUT" ] && echo "bench-live: wrote $KOUT" >&2
	return 0
}

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
for part in $PARTS; do
	case $part in
	capture) capture_part ;;
	kstate) kstate_part ;;
	*) echo "bench-live: unknown part $part (capture, kstate)" >&2; exit 1 ;;
	esac
done
