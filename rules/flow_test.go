package rules

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/record"
)

// The tests here run each rule kind on packets and on the flow events
// the same packets make (twin): the alerts (names and labels) are the
// same, but where a test says why they differ.

// handshake opens and closes a connection: SYN, SYN-ACK, ACK, FINs.
func (w *twin) handshake(src string, sp uint16, dst string, dp uint16, at time.Duration, closed bool) {
	us := time.Microsecond
	w.packet(src, sp, dst, dp, capture.SYN, at, 74)
	w.packet(dst, dp, src, sp, capture.SYN|capture.ACK, at+us, 74)
	w.packet(src, sp, dst, dp, capture.ACK, at+2*us, 66)
	if closed {
		w.packet(src, sp, dst, dp, capture.FIN|capture.ACK, at+3*us, 66)
		w.packet(dst, dp, src, sp, capture.FIN|capture.ACK, at+4*us, 66)
		w.packet(src, sp, dst, dp, capture.ACK, at+5*us, 66)
	}
}

func TestFlowTransition(t *testing.T) {
	w := newTwin(t, `
groups:
  - name: g
    rules:
      - alert: Rejected
        kind: transition
        transition: {from: [S0], to: [REJ]}
      - alert: Attempted
        kind: transition
        track: by_src
        transition: {to: [S0]}
      - alert: Closed
        kind: transition
        track: by_pair
        transition: {to: [SF]}
`, nil)
	for i := range 20 {
		at := time.Duration(i) * time.Millisecond
		w.packet("203.0.113.7", 40000, "198.18.0.1", uint16(i+1), capture.SYN, at, 60)
		if i < 10 {
			w.packet("198.18.0.1", uint16(i+1), "203.0.113.7", 40000, capture.RST|capture.ACK, at+time.Microsecond, 60)
		}
	}
	w.handshake("10.0.0.1", 5000, "198.18.0.2", 80, 100*time.Millisecond, true)
	w.finish()
	got := w.same(13) // 10 flows rejected, 2 sources, 1 pair
	if got["[{alertname Closed} {dst 198.18.0.2} {severity warning} {src 10.0.0.1}]"] != 1 {
		t.Errorf("no Closed alert for the pair: %v", got)
	}
}

func TestFlowAnomaly(t *testing.T) {
	w := newTwin(t, `
groups:
  - name: g
    rules:
      - alert: Flags
        kind: anomaly
        track: by_src
        anomaly: [xmas, syn_fin]
        suppress: 1m
`, nil)
	for i := range 50 { // single-packet flows: the start fires
		w.packet("203.0.113.9", 40000, "198.18.0.1", uint16(i+1), capture.FIN|capture.PSH|capture.URG, time.Duration(i)*time.Millisecond, 60)
	}
	// A flow whose fourth packet is anomalous: its end fires.
	w.handshake("10.0.0.5", 5000, "198.18.0.2", 80, time.Second, false)
	w.packet("10.0.0.5", 5000, "198.18.0.2", 80, capture.SYN|capture.FIN, time.Second+time.Millisecond, 60)
	w.finish()
	w.same(2)
	p, f := w.r.eng.Manager().Stats().ByRule["Flags"], w.fe.Manager().Stats().ByRule["Flags"]
	if p.Fired != f.Fired || f.Fired != 2 || f.Suppressed != p.Suppressed {
		t.Errorf("packet path %+v, flow events %+v: want the same, two alerts", p, f)
	}
}

func TestFlowNewFlowAndAttempt(t *testing.T) {
	w := newTwin(t, `
groups:
  - name: g
    interval: 10s
    rules:
      - alert: NewFlows
        kind: threshold
        track: by_src
        threshold: {event: new_flow, above: 5}
      - alert: Attempts
        kind: threshold
        track: by_dst
        threshold: {event: attempt, above: 5}
`, nil)
	for i := range 10 {
		at := time.Duration(i) * time.Millisecond
		w.handshake("10.0.0.1", uint16(5000+i), "198.18.0.1", 80, at, true)
		// Midstream flows: new, not attempts.
		w.packet("10.0.0.2", uint16(6000+i), "198.18.0.3", 22, capture.ACK, at, 100)
	}
	w.finish()
	w.same(3)
}

// TestFlowHalfOpen: unanswered SYNs to a host raise its alert on both
// paths; a served host's connections, answered and closed, leave the
// half-open count at their answers (the flow events' FlowAnswered), or,
// when those events are lost, at their records, written a linger (5 s)
// after their ends: 150 in a window, one every 60 ms, keep fewer than 100
// open at once and raise nothing either way.
func TestFlowHalfOpen(t *testing.T) {
	for _, lose := range []bool{false, true} {
		w := newTwin(t, floodRule, nil)
		w.loseAnswered = lose
		for i := range 300 {
			at := time.Duration(i) * 30 * time.Millisecond
			w.packet(fmt.Sprintf("203.0.%d.%d", i/250, i%250+1), uint16(1024+i), "198.18.0.1", 80, capture.SYN, at, 60)
			if i%2 == 0 {
				w.handshake(fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), uint16(2000+i), "198.18.0.2", 443, at, true)
			}
		}
		w.finish()
		if got := w.same(1); got["[{alertname SYNFlood} {dst 198.18.0.1} {severity warning}]"] != 1 {
			t.Errorf("answered events lost %v: alerts %v, want the flood's victim", lose, got)
		}
		if n := w.events[record.FlowAnswered]; (n == 0) != lose {
			t.Errorf("answered events lost %v: %d sent", lose, n)
		}
	}
}

// TestFlowHalfOpenOpenFlows: answered flows that stay open leave the
// half-open count at their answers, as on the packet path: 150 answered
// flows to a host within a window raise nothing. When their answered
// events are lost they leave it at their next record, an interim one or
// their end, and count as attempts until then: the flow events raise an
// alert, and with an interim record after the first 75 the count stays
// 75 + 75 and nothing fires. No flow leaves the count twice: 150
// unanswered SYNs to the same host among them raise its alert whatever
// the records.
func TestFlowHalfOpenOpenFlows(t *testing.T) {
	for _, c := range []struct {
		lose, interim, syns bool
		wantFlow            int
	}{
		{false, false, false, 0},
		{false, true, false, 0},
		{true, false, false, 1},
		{true, true, false, 0},
		{false, true, true, 1},
		{true, true, true, 1},
	} {
		w := newTwin(t, floodRule, nil)
		w.loseAnswered = c.lose
		for i := range 150 {
			if c.interim && i == 75 {
				w.interim()
			}
			at := time.Duration(i) * time.Millisecond
			w.handshake(fmt.Sprintf("10.0.0.%d", i+1), 2000, "198.18.0.2", 443, at, false)
			if c.syns {
				w.packet(fmt.Sprintf("203.0.113.%d", i+1), 3000, "198.18.0.2", 443, capture.SYN, at, 60)
			}
		}
		if c.interim {
			w.interim()
		}
		w.finish()
		pkt, flow := alertSet(w.r.rec), alertSet(w.frec)
		wantPkt := 0
		if c.syns {
			wantPkt = 1
		}
		if len(pkt) != wantPkt || len(flow) != c.wantFlow {
			t.Errorf("%+v: packet path %v, flow events %v; want %d and %d", c, pkt, flow, wantPkt, c.wantFlow)
		}
	}
}

func TestFlowConnState(t *testing.T) {
	w := newTwin(t, `
groups:
  - name: g
    interval: 10s
    rules:
      - alert: Rejections
        kind: threshold
        track: by_dst
        match: {conn_state: [REJ]}
        threshold: {event: conn_state, above: 5}
      - alert: Unanswered
        kind: threshold
        track: by_dst
        match: {conn_state: [S0]}
        threshold: {event: conn_state, above: 5}
`, nil)
	for i := range 10 {
		at := time.Duration(i) * time.Millisecond
		w.packet("203.0.113.7", uint16(40000+i), "198.18.0.1", 80, capture.SYN, at, 60)
		w.packet("198.18.0.1", 80, "203.0.113.7", uint16(40000+i), capture.RST|capture.ACK, at+time.Microsecond, 60)
		w.packet("203.0.113.7", uint16(41000+i), "198.18.0.2", 80, capture.SYN, at, 60)
	}
	w.finish()
	w.same(3) // the rejected flows were unanswered first
}

func TestFlowPackets(t *testing.T) {
	w := newTwin(t, `
groups:
  - name: g
    interval: 10s
    rules:
      - alert: Packets
        kind: threshold
        track: by_dst
        threshold: {event: packet, above: 50}
      - alert: SYNs
        kind: threshold
        track: by_dst
        match: {flags: [SYN, "!ACK"]}
        threshold: {event: packet, above: 5}
`, nil)
	for i := range 60 {
		w.packet("10.0.0.1", 5000, "198.18.0.1", 80, capture.ACK, time.Duration(i)*time.Millisecond, 100)
	}
	for i := range 40 {
		w.packet("10.0.0.1", 5001, "198.18.0.2", 80, capture.ACK, time.Duration(i)*time.Millisecond, 100)
	}
	for i := range 10 { // single-SYN flows: their flags are their packet's
		w.packet("10.0.0.1", uint16(6000+i), "198.18.0.3", 80, capture.SYN, time.Duration(i)*time.Millisecond, 60)
	}
	w.finish()
	w.same(2)
}

func TestFlowVolume(t *testing.T) {
	w := newTwin(t, `
groups:
  - name: g
    interval: 10s
    rules:
      - alert: TalkativeSource
        kind: volume
        track: by_src
        volume: {measure: packets, above: 100}
      - alert: HeavyFlow
        kind: volume
        track: by_flow
        volume: {measure: bytes, above: 100000}
      - alert: BusyHost
        kind: volume
        track: by_dst
        volume: {measure: bytes, above: 50000}
`, nil)
	for i := range 120 {
		w.packet("10.0.0.1", 5000, "198.18.0.1", 443, capture.ACK|capture.PSH, time.Duration(i)*40*time.Millisecond, 1000)
	}
	for i := range 30 {
		w.packet("10.0.0.2", 5000, "198.18.0.2", 443, capture.ACK|capture.PSH, time.Duration(i)*40*time.Millisecond, 1000)
	}
	w.finish()
	w.same(3)
}

// TestFlowInterimDeltas: a flow moving 60 kB in each of three windows,
// with an interim record at each window's end, counts each window's
// bytes once: the records' differences, not their running totals (which
// would cross 100 kB in the second). A flow moving 150 kB in one window
// fires at its interim record.
func TestFlowInterimDeltas(t *testing.T) {
	w := newTwin(t, `
groups:
  - name: g
    interval: 10s
    rules:
      - alert: HeavyFlow
        kind: volume
        track: by_flow
        volume: {measure: bytes, above: 100000}
`, nil)
	for win := range 3 {
		for i := range 60 {
			at := time.Duration(win)*10*time.Second + time.Duration(i)*100*time.Millisecond
			w.packet("10.0.0.1", 5000, "198.18.0.1", 443, capture.ACK|capture.PSH, at, 1000)
			if win == 2 {
				w.packet("10.0.0.2", 5000, "198.18.0.2", 443, capture.ACK|capture.PSH, at, 1500)
				w.packet("10.0.0.2", 5000, "198.18.0.2", 443, capture.ACK|capture.PSH, at+time.Millisecond, 1000)
			}
		}
		w.interim()
	}
	heavy := w.frec.firing("HeavyFlow")
	if len(heavy) != 1 || heavy[0].Labels.Get("src") != "10.0.0.2" {
		t.Fatalf("before the ends: %v, want the 150 kB flow's alert (at its interim record)", heavy)
	}
	w.finish()
	w.same(1)
	if w.events[record.FlowInterim] != 4 {
		t.Errorf("%d interim records, want 4", w.events[record.FlowInterim])
	}
}

func TestFlowDistinct(t *testing.T) {
	w := newTwin(t, `
groups:
  - name: g
    interval: 10s
    rules:
      - alert: PortScan
        kind: threshold
        track: by_src
        match: {protocol: tcp, flags: [SYN, "!ACK"]}
        threshold: {event: distinct_dst_ports, above: 20}
      - alert: HostSweep
        kind: threshold
        track: by_src
        match: {protocol: tcp, flags: [SYN, "!ACK"]}
        threshold: {event: distinct_dst_hosts, above: 20}
      - alert: ManySources
        kind: threshold
        track: by_dst
        threshold: {event: distinct_src_hosts, above: 20}
`, nil)
	for i := range 30 {
		at := time.Duration(i) * time.Millisecond
		w.packet("203.0.113.7", 40000, "198.18.0.1", uint16(i+1), capture.SYN, at, 60)
		w.packet("203.0.113.8", 40000, fmt.Sprintf("198.18.1.%d", i+1), 80, capture.SYN, at, 60)
		w.udp(fmt.Sprintf("10.0.1.%d", i+1), 53000, "198.18.2.1", 53, at, 80)
	}
	w.finish()
	w.same(3)
}

func TestFlowWatchlistAndNovelty(t *testing.T) {
	lists := fakeLists{
		"blocklist": {netip.MustParsePrefix("192.0.2.0/24")},
		"scanners":  {netip.MustParsePrefix("203.0.113.7/32")},
	}
	w := newTwin(t, lookupRules, lists)
	at := time.Duration(0)
	flow := func(src string, sp uint16, dst string) {
		w.handshake(src, sp, dst, 443, at, false)
		at += time.Millisecond
	}
	flow("10.0.0.1", 1000, "192.0.2.9")
	flow("10.0.0.1", 1001, "192.0.2.9")
	flow("203.0.113.7", 1002, "198.18.0.1")
	flow("203.0.113.7", 1003, "198.18.0.1")
	flow("10.0.0.2", 1004, "198.18.0.2")
	w.finish()
	w.same(4)
}

// TestFlowDuplicates: flow events count nothing toward a duplicates
// rule, whose share is of the packets the dedup stage saw.
func TestFlowDuplicates(t *testing.T) {
	r := newRig(t, `
groups:
  - name: g
    interval: 10s
    rules:
      - alert: Dups
        kind: duplicates
        duplicates: {above: 0.3, min_packets: 100}
`)
	kernel := newShard(t, r.eng)
	var p capture.Packet
	for i := range 400 {
		at := time.Duration(i) * 10 * time.Millisecond
		r.packet("10.0.0.1", 1000, "198.18.0.1", 80, capture.ACK, at, 100)
		if i%2 == 0 {
			r.sh.Duplicate(&p)
		}
		f := record.Flow{Start: t0.Add(at).UnixNano(), End: t0.Add(at).UnixNano(), Hash: uint64(i), Proto: capture.ProtoUDP,
			Orig: netip.MustParseAddr("10.0.2.1"), Resp: netip.MustParseAddr("198.18.0.9"), OrigPkts: 100, OrigIPBytes: 10000}
		kernel.Flow(&record.Event{Kind: record.FlowStarted, Flow: &f})
		kernel.Flow(&record.Event{Kind: record.FlowEnded, Flow: &f})
	}
	r.packet("10.0.0.1", 1000, "198.18.0.1", 80, capture.ACK, 11*time.Second, 100)
	if err := kernel.Finish(r.end); err != nil {
		t.Fatal(err)
	}
	r.finish()
	f := r.rec.firing("Dups")
	if len(f) != 1 || f[0].Value < 0.33 || f[0].Value > 0.34 {
		t.Fatalf("firing %+v, want one at a share of 200/600 (the kernel's flows not counted)", f)
	}
}

// TestFlowLateRecordCounted: a flow's record whose last packet is two
// windows behind the clock (an idle flow's, written its timeout later)
// counts in the current window, and its alert holds through that
// window's check.
func TestFlowLateRecordCounted(t *testing.T) {
	r := newRig(t, `
groups:
  - name: g
    interval: 10s
    rules:
      - alert: Packets
        kind: threshold
        track: by_dst
        threshold: {event: packet, above: 100}
      - alert: HeavyFlow
        kind: volume
        track: by_flow
        volume: {measure: bytes, above: 10000}
`)
	sh := r.sh
	f := record.Flow{Start: t0.UnixNano(), End: t0.Add(time.Second).UnixNano(), Hash: 7, Proto: capture.ProtoUDP,
		Orig: netip.MustParseAddr("10.0.0.1"), Resp: netip.MustParseAddr("198.18.0.1"), OrigPkts: 200, OrigIPBytes: 20000}
	sh.Flow(&record.Event{Kind: record.FlowStarted, Flow: &f})
	g := f
	g.Start, g.End, g.Hash, g.OrigPkts = t0.Add(25*time.Second).UnixNano(), t0.Add(25*time.Second).UnixNano(), 8, 1
	sh.Flow(&record.Event{Kind: record.FlowStarted, Flow: &g}) // the clock is in window 2
	sh.Flow(&record.Event{Kind: record.FlowEnded, Flow: &f})
	for _, name := range []string{"Packets", "HeavyFlow"} {
		a := r.rec.firing(name)
		if len(a) != 1 || a[0].StartsAt.Before(t0.Add(20*time.Second)) {
			t.Fatalf("%s: firing %+v, want one alert in the current window", name, a)
		}
	}
	g.End = t0.Add(35 * time.Second).UnixNano()
	sh.Flow(&record.Event{Kind: record.FlowEnded, Flow: &g}) // window 2 ends: the alerts held in it
	for _, name := range []string{"Packets", "HeavyFlow"} {
		if res := r.rec.resolved(name); len(res) != 0 {
			t.Errorf("%s: resolved %+v at the end of the window it crossed in", name, res)
		}
	}
	sh.publish()
	if late := r.eng.Stats().Late; late != 0 {
		t.Errorf("%d late, want 0: a flow's late record is counted", late)
	}
}

// TestFlowMemoBounded: the table of flows with interim records takes a
// flow while one of its slots is free or stale, and refuses it when all
// are held by live flows; an ended flow frees its slot.
func TestFlowMemoBounded(t *testing.T) {
	var m flowMemo
	now := t0.UnixNano()
	var held []*memoEntry
	for i := range memoProbes {
		e := m.take(uint64(i)*memoSize, int64(i), now) // the same home slot
		if e == nil {
			t.Fatalf("flow %d not taken", i)
		}
		e.last = now
		held = append(held, e)
	}
	if e := m.take(memoProbes*memoSize, 99, now); e != nil {
		t.Fatalf("a ninth flow for the same slots was taken")
	}
	if e := m.find(3*memoSize, 3); e != held[3] {
		t.Fatalf("find: %p, want %p", e, held[3])
	}
	*held[3] = memoEntry{} // its flow ended
	if e := m.take(memoProbes*memoSize, 99, now); e == nil {
		t.Fatalf("a freed slot was not taken")
	}
	if n := unsafe.Sizeof(memoEntry{}); n != 64 {
		t.Errorf("an entry is %d bytes, want 64 (a cache line; memoSize of them, 1 MiB)", n)
	}
	if e := m.take(10*memoSize, 100, now+memoStale+1); e == nil {
		t.Fatalf("a stale slot was not taken")
	}
	if m.find(0, 0) != nil {
		t.Errorf("the stale flow is still found")
	}
}

// TestFlowAllocatesNothing: flow events through the default rules
// allocate nothing once the table of interim records is made.
func TestFlowAllocatesNothing(t *testing.T) {
	r := newRig(t, string(defaultRules))
	f := record.Flow{Proto: capture.ProtoTCP, Orig: netip.MustParseAddr("10.0.0.1"), Resp: netip.MustParseAddr("198.18.0.1"),
		OrigPort: 1000, RespPort: 443, OrigTCPFlags: capture.SYN, OrigPkts: 1, OrigIPBytes: 60}
	ev := record.Event{Flow: &f}
	i := 0
	send := func() {
		i++
		f.Start, f.End, f.Hash = t0.Add(time.Duration(i)*time.Millisecond).UnixNano(), t0.Add(time.Duration(i)*time.Millisecond).UnixNano(), uint64(i)
		ev.Kind = record.FlowStarted
		r.sh.Flow(&ev)
		ev.Kind = record.FlowInterim
		r.sh.Flow(&ev)
		ev.Kind = record.FlowEnded
		r.sh.Flow(&ev)
	}
	send()
	if allocs := testing.AllocsPerRun(2000, send); allocs != 0 {
		t.Errorf("%v allocations per flow, want 0", allocs)
	}
}
