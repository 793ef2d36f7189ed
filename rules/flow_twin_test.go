package rules

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/record"
)

// twin runs the same packets through the packet path (a rig) and, as the
// kernel's flow state would send them, as flow events through a second
// engine of the same rules: a start after each flow's first packet, its
// end at the packet that ends it (or at finish), interim records when
// asked. The flow records are made from the rig's ACSM events.
type twin struct {
	t     testing.TB
	r     *rig
	fe    *Engine
	fsh   *Shard
	frec  *recorder
	flows map[uint64]*record.Flow
	ended []*record.Flow  // ended, their records not yet written (linger)
	seen  map[string]bool // the flow path's host-pair history
	end   time.Time
	// events counts the flow events sent, by kind; anoms are the flows'
	// anomalies so far, by flow hash and start.
	events map[record.EventKind]int
	anoms  map[[2]int64]acsm.Anomaly
	// answered are the flows that left S0, by flow hash and start;
	// loseAnswered drops their answered events, as a full ring does.
	answered     map[[2]int64]bool
	loseAnswered bool
}

func newTwin(t testing.TB, rulesYAML string, lists Watchlists) *twin {
	t.Helper()
	w := &twin{t: t, flows: map[uint64]*record.Flow{}, seen: map[string]bool{},
		events: map[record.EventKind]int{}, anoms: map[[2]int64]acsm.Anomaly{}, answered: map[[2]int64]bool{}}
	seen := map[string]bool{}
	var r *rig
	r = newRig(t, rulesYAML, Lookups{Watchlists: lists, Novel: func() bool {
		return novelPair(seen, r.ev.Originator())
	}})
	w.r = r
	f, err := Parse("test.yaml", []byte(rulesYAML))
	if err != nil {
		t.Fatal(err)
	}
	set, err := Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	w.frec = newRecorder()
	w.fe = NewEngine(set, alerts.NewManager(alerts.ManagerOptions{}, w.frec))
	w.fsh = newShard(t, w.fe, Lookups{Watchlists: lists})
	return w
}

func novelPair(seen map[string]bool, o capture.Key) bool {
	k := o.Src.String() + ">" + o.Dst.String()
	novel := !seen[k]
	seen[k] = true
	return novel
}

// packet sends a TCP packet of size wire bytes from src:sp to dst:dp at t0+at down both paths.
func (w *twin) packet(src string, sp uint16, dst string, dp uint16, flags capture.TCPFlags, at time.Duration, size uint32) {
	w.send(capture.Key{Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr(dst), SrcPort: sp, DstPort: dp, Proto: capture.ProtoTCP}, true, flags, at, size)
}

func (w *twin) udp(src string, sp uint16, dst string, dp uint16, at time.Duration, size uint32) {
	w.send(capture.Key{Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr(dst), SrcPort: sp, DstPort: dp, Proto: capture.ProtoUDP}, false, 0, at, size)
}

func (w *twin) send(k capture.Key, tcp bool, flags capture.TCPFlags, at time.Duration, size uint32) {
	c, rev := k.Canonical()
	p := capture.Packet{Timestamp: t0.Add(at), Key: c, Reversed: rev, Hash: c.Hash(), HasTCP: tcp, Flags: flags,
		WireLen: size, IPLen: uint16(size - linkHeader)}
	w.sendPacket(&p)
}

// sendPacket sends a decoded packet down both paths.
func (w *twin) sendPacket(p *capture.Packet) {
	r := w.r
	r.ev = r.tr.Observe(p)
	r.sh.Packet(p, &r.ev)
	r.end, w.end = p.Timestamp, p.Timestamp
	ev := &r.ev
	t := p.Timestamp.UnixNano()
	k, tcp, flags := p.Directed(), p.Key.Proto == capture.ProtoTCP && p.HasTCP, p.Flags
	w.flushEnded(t)
	f := w.flows[ev.Hash]
	if ev.New {
		if f != nil { // a SYN reusing the 5-tuple: the old flow ends
			w.emit(record.FlowEnded, f, false)
		}
		o := ev.Originator()
		f = &record.Flow{Start: t, Hash: ev.Hash, Orig: o.Src, OrigPort: o.SrcPort, Resp: o.Dst, RespPort: o.DstPort, Proto: o.Proto}
		w.flows[ev.Hash] = f
	}
	isOrig := k.Src == f.Orig && k.SrcPort == f.OrigPort
	if f.OrigPkts+f.RespPkts == 0 && tcp {
		f.History.AppendLetter(firstLetter(flags, isOrig))
	}
	if isOrig {
		f.OrigPkts++
		f.OrigIPBytes += uint64(p.IPLen)
		f.OrigTCPFlags |= flags
	} else {
		f.RespPkts++
		f.RespIPBytes += uint64(p.IPLen)
		f.RespTCPFlags |= flags
	}
	f.End = t
	prev := f.State
	if ev.State != acsm.ConnUnknown {
		f.State = ev.State
	}
	w.anomalies(f, ev.Anomalies)
	if ev.New {
		w.emit(record.FlowStarted, f, novelPair(w.seen, ev.Originator()))
	} else if k := [2]int64{int64(f.Hash), f.Start}; prev == acsm.S0 && f.State != acsm.S0 && !w.answered[k] {
		// The kernel's answered event: once a flow, as it leaves S0.
		w.answered[k] = true
		if !w.loseAnswered {
			w.emit(record.FlowAnswered, f, false)
		}
	}
	if ev.Ended {
		w.ended = append(w.ended, f)
	}
}

// linger is how long after its end the kernel's flow state writes a
// flow's record (flowtable.Linger): its stragglers count in it.
const linger = int64(5 * time.Second)

// flushEnded sends the records of the ended flows whose linger is over
// at t.
func (w *twin) flushEnded(t int64) {
	n := 0
	for _, f := range w.ended {
		if w.flows[f.Hash] != f {
			continue // replaced by a new flow, which ended it
		}
		if t-f.End < linger {
			w.ended[n] = f
			n++
			continue
		}
		w.emit(record.FlowEnded, f, false)
	}
	w.ended = w.ended[:n]
}

// anomalies adds a to f's anomalies so far and returns them.
func (w *twin) anomalies(f *record.Flow, a acsm.Anomaly) acsm.Anomaly {
	k := [2]int64{int64(f.Hash), f.Start}
	w.anoms[k] |= a
	return w.anoms[k]
}

// firstLetter is the history letter of a flow's first packet.
func firstLetter(f capture.TCPFlags, isOrig bool) byte {
	c := byte('A')
	switch {
	case f&(capture.SYN|capture.ACK|capture.FIN|capture.RST) == capture.SYN:
		c = 'S'
	case f&(capture.SYN|capture.ACK|capture.FIN|capture.RST) == capture.SYN|capture.ACK:
		c = 'H'
	case f&(capture.SYN|capture.FIN|capture.RST) == capture.FIN:
		c = 'F'
	case f&(capture.SYN|capture.FIN|capture.RST) == capture.RST:
		c = 'R'
	}
	if !isOrig {
		c += 'a' - 'A'
	}
	return c
}

// emit sends one flow event of f (a copy, as the reader's record is
// reused).
func (w *twin) emit(kind record.EventKind, f *record.Flow, novel bool) {
	cp := *f
	switch kind {
	case record.FlowInterim:
		cp.EndReason = record.EndActive
	case record.FlowEnded:
		cp.EndReason = record.EndOfFlow
		delete(w.flows, f.Hash)
	}
	w.events[kind]++
	w.fsh.Flow(&record.Event{Kind: kind, Flow: &cp, Anomalies: w.anomalies(f, 0), Novel: novel})
}

// interim sends an interim record of every open flow, in start order.
func (w *twin) interim() {
	for _, f := range w.open() {
		w.emit(record.FlowInterim, f, false)
	}
}

func (w *twin) open() []*record.Flow {
	fs := slices.Collect(maps.Values(w.flows))
	slices.SortFunc(fs, func(a, b *record.Flow) int { return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Hash, b.Hash)) })
	return fs
}

// finish ends the open flows (forced, at their last packets) and both
// paths.
func (w *twin) finish() {
	for _, f := range w.open() {
		w.emit(record.FlowEnded, f, false)
	}
	w.r.finish()
	if err := w.fsh.Finish(w.end); err != nil {
		w.t.Fatal(err)
	}
}

// alertSet is the firing alerts of a recorder as "name{labels}", each
// with how many alerts have it.
func alertSet(rec *recorder) map[string]int {
	m := map[string]int{}
	for _, a := range rec.All() {
		if !a.Resolved() {
			m[fmt.Sprint(a.Labels)]++
		}
	}
	return m
}

// same checks that both paths fired the same alerts (names and labels),
// want of them, and returns them.
func (w *twin) same(want int) map[string]int {
	w.t.Helper()
	pkt, flow := alertSet(w.r.rec), alertSet(w.frec)
	if !maps.Equal(pkt, flow) {
		w.t.Errorf("alerts differ:\npacket path: %v\nflow events: %v", pkt, flow)
	}
	if n := len(pkt); n != want {
		w.t.Errorf("packet path: %d distinct alerts, want %d: %v", n, want, pkt)
	}
	return flow
}
