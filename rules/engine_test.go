package rules

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/period"
)

// recorder is a memory sink with lookups by alert name.
type recorder struct{ *alerts.Memory }

func newRecorder() *recorder { return &recorder{alerts.NewMemory("recorder")} }

func (r *recorder) firing(name string) []alerts.Alert   { return r.select_(name, false) }
func (r *recorder) resolved(name string) []alerts.Alert { return r.select_(name, true) }

func (r *recorder) select_(name string, resolved bool) []alerts.Alert {
	var out []alerts.Alert
	for _, a := range r.All() {
		if a.Name() == name && a.Resolved() == resolved {
			out = append(out, a)
		}
	}
	return out
}

// rig runs packets through an ACSM tracker and one rules shard, as a
// pipeline shard does.
type rig struct {
	t   testing.TB
	tr  *acsm.Tracker
	eng *Engine
	sh  *Shard
	rec *recorder
	ev  acsm.Event
	end time.Time
}

// newRig builds an engine of the rules and one shard, which asks lk (at
// most one; none: no watchlists, no history).
func newRig(t testing.TB, rulesYAML string, lk ...Lookups) *rig {
	t.Helper()
	f, err := Parse("test.yaml", []byte(rulesYAML))
	if err != nil {
		t.Fatal(err)
	}
	set, err := Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := acsm.New(acsm.Config{Backend: acsm.BackendExact, Capacity: 1 << 16, KeepEnded: true, ShadowRate: -1})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	eng := NewEngine(set, alerts.NewManager(alerts.ManagerOptions{}, rec))
	return &rig{t: t, tr: tr, eng: eng, sh: newShard(t, eng, lk...), rec: rec}
}

// newShard is eng.NewShard(lk[0]), or of no lookups.
func newShard(t testing.TB, eng *Engine, lk ...Lookups) *Shard {
	t.Helper()
	var l Lookups
	if len(lk) > 0 {
		l = lk[0]
	}
	sh, err := eng.NewShard(l)
	if err != nil {
		t.Fatal(err)
	}
	return sh
}

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// packet sends one TCP (or, flags < 0, UDP) packet of size bytes from
// src:sp to dst:dp at t0+at.
func (r *rig) packet(src string, sp uint16, dst string, dp uint16, flags capture.TCPFlags, at time.Duration, size uint32) {
	k := capture.Key{Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr(dst), SrcPort: sp, DstPort: dp, Proto: capture.ProtoTCP}
	r.packetKey(k, true, flags, at, size)
}

func (r *rig) packetKey(k capture.Key, tcp bool, flags capture.TCPFlags, at time.Duration, size uint32) {
	c, rev := k.Canonical()
	p := capture.Packet{Timestamp: t0.Add(at), Key: c, Reversed: rev, Hash: c.Hash(), HasTCP: tcp, Flags: flags, WireLen: size, IPLen: uint16(min(size, 65535))}
	r.ev = r.tr.Observe(&p)
	r.sh.Packet(&p, &r.ev)
	r.end = p.Timestamp
}

func (r *rig) finish() {
	if err := r.sh.Finish(r.end); err != nil {
		r.t.Fatal(err)
	}
}

const floodRule = `
groups:
  - name: g
    interval: 10s
    rules:
      - alert: SYNFlood
        kind: threshold
        track: by_dst
        match: {protocol: tcp}
        threshold: {event: half_open, above: 100}
        annotations: {summary: "{{.Dst}} {{.Value}}"}
        suppress: 1m
`

// TestSYNFloodFiresOnceAndResolves: 300 unanswered SYNs from distinct
// sources to one host within a window raise one alert labelled with the
// destination; it stays firing while the flood lasts and resolves at the
// end of the first window without it. Answered connections to another
// host, as many, raise nothing.
func TestSYNFloodFiresOnceAndResolves(t *testing.T) {
	r := newRig(t, floodRule)
	for w := range 3 { // three windows of flood
		for i := range 300 {
			at := time.Duration(w)*10*time.Second + time.Duration(i)*time.Millisecond
			r.packet(fmt.Sprintf("203.0.%d.%d", i/250, i%250+1), uint16(1024+i+1000*w), "198.18.0.1", 80, capture.SYN, at, 60)
			// a served host: SYN, SYN-ACK, ACK
			src := fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)
			sp := uint16(2000 + i + 1000*w)
			r.packet(src, sp, "198.18.0.2", 443, capture.SYN, at, 60)
			r.packet("198.18.0.2", 443, src, sp, capture.SYN|capture.ACK, at+time.Microsecond, 60)
			r.packet(src, sp, "198.18.0.2", 443, capture.ACK, at+2*time.Microsecond, 60)
		}
	}
	// Quiet traffic for two more windows drives the clock on.
	for s := 30; s < 55; s++ {
		r.packet("10.1.0.1", 5000, "198.18.0.3", 22, capture.ACK, time.Duration(s)*time.Second, 100)
	}
	r.finish()
	got := r.rec.firing("SYNFlood")
	if len(got) != 1 {
		t.Fatalf("%d firing alerts, want 1: %+v", len(got), got)
	}
	a := got[0]
	if a.Labels.Get("dst") != "198.18.0.1" || a.Labels.Get("severity") != DefaultSeverity {
		t.Errorf("labels %v", a.Labels)
	}
	if a.Value <= 100 || a.Annotations["summary"] != "198.18.0.1 101" {
		t.Errorf("value %v, annotation %q", a.Value, a.Annotations["summary"])
	}
	if want := t0.Add(100 * time.Millisecond); !a.StartsAt.Equal(want) {
		t.Errorf("starts at %v, want %v (the 101st SYN)", a.StartsAt, want)
	}
	res := r.rec.resolved("SYNFlood")
	if len(res) != 1 || !res[0].EndsAt.Equal(t0.Add(40*time.Second)) {
		t.Fatalf("resolved %+v, want one ending at the end of the first quiet window (t0+40s)", res)
	}
	// The flood's second and third windows crossed again: folded.
	if res[0].Count != 3 {
		t.Errorf("count %d, want 3 (one crossing per window)", res[0].Count)
	}
	if st := r.eng.Manager().Stats().ByRule["SYNFlood"]; st.Fired != 1 || st.Suppressed != 2 || st.Resolved != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestCrossedKeyNotCountedFurther: once a key crosses its threshold in a
// window its alert holds for the window, so its further SYNs are not
// counted there (a flood's victim's counters stop taking writes); the
// next window counts it afresh and crosses again.
func TestCrossedKeyNotCountedFurther(t *testing.T) {
	r := newRig(t, floodRule)
	victim := netip.MustParseAddr("198.18.0.1")
	rl := r.eng.set.Load().counting[0]
	for w := range 2 {
		for i := range 300 {
			at := time.Duration(w)*10*time.Second + time.Duration(i)*time.Millisecond
			r.packet(fmt.Sprintf("203.0.%d.%d", i/250, i%250+1), uint16(1024+i+1000*w), victim.String(), 80, capture.SYN, at, 60)
		}
		win := period.Of(t0.Add(time.Duration(w)*10*time.Second).UnixNano(), rl.st.win.size)
		if n := rl.st.counts[slot(win)].estimate(addrHash(victim)); n != 101 {
			t.Errorf("window %d: the victim's count %v after 300 SYNs, want 101 (counted up to its crossing)", w, n)
		}
	}
	r.finish()
	if st := r.eng.Manager().Stats().ByRule["SYNFlood"]; st.Fired != 1 || st.Suppressed != 1 {
		t.Errorf("stats %+v, want one alert fired and its second window's crossing folded", st)
	}
}

// TestLaggingShardCrossesOnceAWindow: a shard behind the others still
// counts into the window that just ended. There the victim of a flood may
// have crossed, an answered flow taken its half-open count back to the
// threshold, and the victim's mark moved on to the next window, so the
// lagging shard's SYN crosses the ended window's threshold again (on the
// flood of make bench-replay two workers would report 3 crossings for 2
// windows). The manager counts a window's crossing once.
func TestLaggingShardCrossesOnceAWindow(t *testing.T) {
	r := newRig(t, floodRule)
	ahead := newShard(t, r.eng)
	send := func(sh *Shard, src string, sp uint16, dst string, dp uint16, flags capture.TCPFlags, at time.Duration) {
		k := capture.Key{Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr(dst), SrcPort: sp, DstPort: dp, Proto: capture.ProtoTCP}
		c, rev := k.Canonical()
		p := capture.Packet{Timestamp: t0.Add(at), Key: c, Reversed: rev, Hash: c.Hash(), HasTCP: true, Flags: flags, WireLen: 60, IPLen: 60}
		ev := r.tr.Observe(&p)
		sh.Packet(&p, &ev)
	}
	const victim = "198.18.0.1"
	for i := range 101 { // window 0: the 101st half-open flow crosses
		send(r.sh, fmt.Sprintf("203.0.0.%d", i+1), 1024, victim, 80, capture.SYN, time.Duration(i)*time.Millisecond)
	}
	// One of them is answered: 100 half-open again.
	send(r.sh, victim, 80, "203.0.0.1", 1024, capture.SYN|capture.ACK, 5*time.Second)
	for i := range 101 { // the other shard crosses in window 1
		send(ahead, fmt.Sprintf("203.0.1.%d", i+1), 1024, victim, 80, capture.SYN, 10*time.Second+time.Duration(i)*time.Millisecond)
	}
	// The lagging shard's SYN of window 0: 101 half-open there again.
	send(r.sh, "203.0.2.1", 1024, victim, 80, capture.SYN, 9*time.Second)
	if st := r.eng.Manager().Stats().ByRule["SYNFlood"]; st.Fired != 1 || st.Suppressed != 1 {
		t.Errorf("stats %+v, want one alert fired and window 1's crossing folded into it, window 0's second not counted", st)
	}
	got := r.rec.firing("SYNFlood")
	if len(got) != 1 {
		t.Fatalf("%d firing alerts, want 1", len(got))
	}
}

// TestAnomalyFoldsRepeats: a thousand XMAS packets from one source are one
// alert counting a thousand, whatever the shard's front folded.
func TestAnomalyFoldsRepeats(t *testing.T) {
	r := newRig(t, `
groups:
  - name: g
    rules:
      - alert: Xmas
        kind: anomaly
        track: by_src
        anomaly: [xmas]
        suppress: 1m
`)
	for i := range 1000 {
		r.packet("203.0.113.9", 40000, "198.18.0.1", uint16(i+1), capture.FIN|capture.PSH|capture.URG, time.Duration(i)*10*time.Millisecond, 60)
	}
	// 70 s later, past the suppress window: a new alert, the old resolved.
	r.packet("203.0.113.9", 40000, "198.18.0.1", 9, capture.FIN|capture.PSH|capture.URG, 80*time.Second, 60)
	r.finish()
	res := r.rec.resolved("Xmas")
	if len(res) != 1 || res[0].Count != 1000 {
		t.Fatalf("resolved %+v, want one alert counting 1000", res)
	}
	if want := t0.Add(9990*time.Millisecond + time.Minute); !res[0].EndsAt.Equal(want) {
		t.Errorf("ends %v, want %v (last repeat + suppress)", res[0].EndsAt, want)
	}
	if n := len(r.rec.firing("Xmas")); n != 2 {
		t.Errorf("%d firing, want 2", n)
	}
	if got := r.rec.firing("Xmas")[0]; got.Labels.Get("src") != "203.0.113.9" || got.Flow.CommunityID == "" {
		t.Errorf("alert %+v", got)
	}
}

// TestTransitionAndScan: a scanner probing 150 ports, 100 of them closed
// (REJ), raises the scan rule once and the transition rule per flow.
func TestTransitionAndScan(t *testing.T) {
	r := newRig(t, `
groups:
  - name: g
    rules:
      - alert: Scan
        kind: threshold
        track: by_src
        match: {flags: [SYN, "!ACK"]}
        threshold: {event: distinct_dst_ports, above: 120}
      - alert: Rejected
        kind: transition
        transition: {from: [S0], to: [REJ]}
`)
	for i := range 150 {
		at := time.Duration(i) * time.Millisecond
		r.packet("203.0.113.7", 40000, "198.18.0.1", uint16(i+1), capture.SYN, at, 60)
		if i < 100 {
			r.packet("198.18.0.1", uint16(i+1), "203.0.113.7", 40000, capture.RST|capture.ACK, at+time.Microsecond, 60)
		}
	}
	r.finish()
	if got := r.rec.firing("Scan"); len(got) != 1 || got[0].Labels.Get("src") != "203.0.113.7" || got[0].Value <= 120 {
		t.Errorf("scan alerts %+v", got)
	}
	got := r.rec.firing("Rejected")
	if len(got) != 100 {
		t.Fatalf("%d Rejected alerts, want 100 (one per flow)", len(got))
	}
	if got[0].Flow.ConnState != "REJ" || got[0].Labels.Get("dst_port") != "1" || got[0].Labels.Get("src") != "203.0.113.7" {
		t.Errorf("first %+v", got[0])
	}
}

// TestForHoldsPending: with for: 15s, a flood lasting one window stays
// pending and one lasting three fires.
func TestForHoldsPending(t *testing.T) {
	rulesYAML := floodRule + "        for: 15s\n"
	for _, c := range []struct {
		windows int
		want    int
	}{{1, 0}, {3, 1}} {
		r := newRig(t, rulesYAML)
		for w := range c.windows {
			for i := range 200 {
				at := time.Duration(w)*10*time.Second + time.Duration(i)*time.Millisecond
				r.packet(fmt.Sprintf("203.0.%d.%d", i/250, i%250+1), uint16(1024+i+1000*w), "198.18.0.1", 80, capture.SYN, at, 60)
			}
		}
		r.packet("10.1.0.1", 5000, "198.18.0.3", 22, capture.ACK, 60*time.Second, 100)
		r.finish()
		if got := len(r.rec.firing("SYNFlood")); got != c.want {
			t.Errorf("%d windows of flood: %d alerts, want %d", c.windows, got, c.want)
		}
	}
}

// TestDuplicatesRule: half the packets duplicates in a window fires;
// none in the next resolves.
func TestDuplicatesRule(t *testing.T) {
	r := newRig(t, `
groups:
  - name: g
    interval: 10s
    rules:
      - alert: Dups
        kind: duplicates
        duplicates: {above: 0.3, min_packets: 100}
`)
	var p capture.Packet
	for i := range 400 {
		at := time.Duration(i) * 10 * time.Millisecond
		r.packet("10.0.0.1", 1000, "198.18.0.1", 80, capture.ACK, at, 100)
		if i%2 == 0 {
			r.sh.Duplicate(&p)
		}
	}
	for i := range 200 {
		r.packet("10.0.0.1", 1000, "198.18.0.1", 80, capture.ACK, 10*time.Second+time.Duration(i)*50*time.Millisecond, 100)
	}
	r.packet("10.0.0.1", 1000, "198.18.0.1", 80, capture.ACK, 21*time.Second, 100)
	r.finish()
	f := r.rec.firing("Dups")
	if len(f) != 1 || f[0].Value < 0.33 || f[0].Value > 0.34 || f[0].Flow.Src.IsValid() {
		t.Fatalf("firing %+v, want one at a share of 200/600", f)
	}
	if res := r.rec.resolved("Dups"); len(res) != 1 || !res[0].EndsAt.Equal(t0.Add(20*time.Second)) {
		t.Errorf("resolved %+v", res)
	}
}

// TestReloadKeepsUnchangedState: swapping in a set where one rule is the
// same keeps its window's count; a changed rule starts afresh.
func TestReloadKeepsUnchangedState(t *testing.T) {
	r := newRig(t, floodRule)
	for i := range 80 {
		r.packet(fmt.Sprintf("203.0.0.%d", i+1), 1024, "198.18.0.1", 80, capture.SYN, time.Duration(i)*time.Millisecond, 60)
	}
	f, _ := Parse("test.yaml", []byte(floodRule+`      - alert: Other
        kind: anomaly
        anomaly: [xmas]
`))
	set, err := Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	r.eng.Swap(set)
	for i := range 30 {
		r.packet(fmt.Sprintf("203.0.1.%d", i+1), 1024, "198.18.0.1", 80, capture.SYN, time.Second+time.Duration(i)*time.Millisecond, 60)
	}
	r.finish()
	if got := len(r.rec.firing("SYNFlood")); got != 1 {
		t.Errorf("%d alerts after reload, want 1 (80 before + 30 after crosses 100)", got)
	}
}

// TestPacketAllocatesNothing: evaluating the default rules on packets that
// fire nothing, and on repeats of a firing alert, allocates nothing.
func TestPacketAllocatesNothing(t *testing.T) {
	r := newRig(t, string(defaultRules))
	i := 0
	allocs := testing.AllocsPerRun(2000, func() {
		i++
		r.packet("10.0.0.1", uint16(1000+i%500), "198.18.0.1", 443, capture.ACK|capture.PSH, time.Duration(i)*time.Millisecond, 1500)
		r.packet("203.0.113.1", 7, "198.18.0.1", 9, capture.FIN|capture.PSH|capture.URG, time.Duration(i)*time.Millisecond, 60)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per packet pair, want 0", allocs)
	}
}

// TestLatePacketsLeftOut: a shard that runs packets two windows behind the
// clock (which another shard moved on) does not count them, since their
// window's slot now holds the next window, and counts them as late; a
// packet of the window just ended still counts.
func TestLatePacketsLeftOut(t *testing.T) {
	r := newRig(t, `
groups:
  - name: g
    interval: 10s
    rules:
      - alert: Attempts
        kind: threshold
        track: by_src
        threshold: {event: attempt, above: 2}
`)
	other := newShard(t, r.eng) // the shard ahead
	ahead := capture.Packet{Timestamp: t0.Add(25 * time.Second), HasTCP: true, Flags: capture.ACK}
	var ev acsm.Event
	other.Packet(&ahead, &ev) // the clock is now in window 2
	for i := range 3 {        // window 0: late
		r.packet("10.0.0.1", uint16(1000+i), "198.18.0.1", 80, capture.SYN, time.Duration(i)*time.Second, 60)
	}
	if n := len(r.rec.firing("Attempts")); n != 0 {
		t.Fatalf("%d alerts from packets two windows late", n)
	}
	r.sh.publish()
	if late := r.eng.Stats().Late; late != 3 {
		t.Fatalf("%d packets counted late, want 3", late)
	}
	for i := range 3 { // window 1: the previous window, still counted
		r.packet("10.0.0.2", uint16(2000+i), "198.18.0.1", 80, capture.SYN, 10*time.Second+time.Duration(i)*time.Second, 60)
	}
	if n := len(r.rec.firing("Attempts")); n != 1 {
		t.Fatalf("%d alerts from three attempts in the window before the clock's, want 1", n)
	}
}

// TestIdleResolvesOnAQuietLink: a flood's alert resolves when the shard's
// source has been quiet past the next window's end, with no packet to
// move the clock (the live agent calls Idle with the wall clock).
func TestIdleResolvesOnAQuietLink(t *testing.T) {
	r := newRig(t, floodRule)
	for i := range 300 {
		r.packet(fmt.Sprintf("203.0.%d.%d", i/250, i%250+1), uint16(1024+i), "198.18.0.1", 80, capture.SYN, time.Duration(i)*time.Millisecond, 60)
	}
	if len(r.rec.firing("SYNFlood")) != 1 {
		t.Fatalf("firing %v", r.rec.firing("SYNFlood"))
	}
	r.sh.Idle(t0.Add(15 * time.Second)) // the flood's window has ended: it is checked
	r.sh.Idle(t0.Add(25 * time.Second)) // a whole quiet window
	if res := r.rec.resolved("SYNFlood"); len(res) != 1 {
		t.Fatalf("resolved %v after a quiet window, want the flood's alert", res)
	}
}
