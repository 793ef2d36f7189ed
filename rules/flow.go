package rules

import (
	"math"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/record"
)

// A flow kept outside the pipeline's shards (the kernel's flow state)
// brings no packets, only events: its start (after its first packet), its
// leaving S0 (at the packet that answered it), an interim record at each
// active timeout, its end. Shard.Flow evaluates
// the same rules on them, through the same step, sketches, windows,
// matches and alerts as a packet (Shard.step), each rule kind at the
// event that tells what it counts:
//
//   - at the start, which is the flow's first packet as the packet path
//     sees it (a new flow, its state after the packet, its flags and
//     anomalies): new_flow, attempt, half_open's increment, the distinct
//     counts, watchlist and novelty (Event.Novel), the transition into
//     the start state and its conn_state count, the first packet's
//     anomalies;
//   - when it leaves S0: half_open's decrement, as the packet path's at
//     the answer;
//   - at an interim record and the end: the packet and volume rules, with
//     the packets and bytes since the flow's previous record (match.flags
//     tested against every flag the flow's packets sent, match.conn_state
//     against the record's state); half_open's decrement when the flow is
//     out of S0 and its leaving S0 was not counted (its event was lost, or
//     found the flow table full);
//   - at the end only: the transition into the final state, from the
//     start state (the states between are not seen), and its conn_state
//     count, when the final state is not the start state; the anomalies
//     of a flow of more than one packet (its later packets' are known
//     only then; the first packet's repeat, folded into the alert).
//
// The packet and volume rules count a flow's packets at its records, at
// the record's last packet time: a flow that stays under its active
// timeout counts all its packets at its end. A record comes after its
// last packet (an idle flow's, the idle timeout later), so its time may
// be behind the windows: what its window can no longer take goes to the
// current window (a by_flow volume rule's table holds one window: what
// any earlier one would have). The shard's clock, which ticks the engine, is the
// latest time its events carried. Duplicates rules count nothing of these
// flows: the kernel's duplicate window drops their duplicates and sends
// up only its count.
//
// What an interim record counted, and whether the flow's leaving S0 was
// counted, is remembered per flow, for the next record to count only the
// difference, in a table of fixed size (flowMemo); a flow that finds it
// full counts nothing at that interim record, and all it did not count at
// its next record, and a flow that finds it full when it leaves S0 is
// taken out of the half-open count at its next record instead.

// linkHeader is the bytes a frame adds to its IP packet on Ethernet, the
// only link the kernel's flow state takes (pipeline/kernelflows): a flow
// record has its IP bytes, and the volume rules count frame bytes
// (capture.Packet.WireLen). VLAN tags and padding are not counted.
const linkHeader = 14

// Flow evaluates the rules on a flow event. It allocates nothing but an
// alert that fires anew, and the table of flows with interim records, at
// the first.
func (s *Shard) Flow(ev *record.Event) {
	f := ev.Flow
	t := f.End
	if ev.Kind == record.FlowStarted {
		t = f.Start
	}
	s.flowNow = max(s.flowNow, t)
	set := s.set
	if s.flowNow >= s.nextFlush || s.flowNow >= s.nextTick {
		set = s.advance(s.flowNow)
	}
	if set == nil {
		return
	}
	if s.holdSet != set {
		s.makeHolds(set)
	}
	x := s.flowContext(ev, t)
	switch ev.Kind {
	case record.FlowStarted:
		x.ev.New, x.ev.Prev, x.pkts = true, acsm.ConnUnknown, 1
		s.nEvals += s.step(set, x, false)
	case record.FlowAnswered:
		s.nEvals += s.flowAnswered(set, x, f)
	case record.FlowInterim:
		s.nEvals += s.flowInterim(set, x, f)
	case record.FlowEnded:
		s.nEvals += s.flowEnded(set, x, f)
	}
}

// Counts adds packets counted and duplicates dropped outside the shards
// (the kernel's flow state, whose packets this shard sees only as flow
// events) to the shard's counts, which the duplicates rules' windows read,
// at now (ns, packet time), the time of the last of them.
func (s *Shard) Counts(packets, duplicates uint64, now int64) {
	s.nPackets += packets
	s.nDups += duplicates
	s.flowNow = max(s.flowNow, now)
	if s.flowNow >= s.nextFlush || s.flowNow >= s.nextTick {
		s.advance(s.flowNow)
	}
}

// flowContext fills the shard's packet context, and the event it reads,
// from a flow event at t (ns): the flow's direction is the record's.
func (s *Shard) flowContext(ev *record.Event, t int64) *packetCtx {
	f := ev.Flow
	e := &s.fev
	*e = acsm.Event{
		Key:  capture.Key{Src: f.Orig, Dst: f.Resp, SrcPort: f.OrigPort, DstPort: f.RespPort, Proto: f.Proto},
		Hash: f.Hash, State: f.State, Prev: f.State, Anomalies: ev.Anomalies,
	}
	x := &s.x
	*x = packetCtx{ev: e, t: t, proto: f.Proto, isTCP: f.Proto == capture.ProtoTCP,
		flags: f.OrigTCPFlags | f.RespTCPFlags, flow: true, novel: ev.Novel, start: f.Start}
	x.pkts64 = f.OrigPkts + f.RespPkts
	x.bytes64 = f.OrigIPBytes + f.RespIPBytes + linkHeader*x.pkts64
	x.wireLen = clamp32(x.bytes64)
	return x
}

// flowInterim counts an interim record's packets and bytes since the
// flow's previous record, and takes the flow out of the half-open count
// once it left S0.
func (s *Shard) flowInterim(set *Set, x *packetCtx, f *record.Flow) uint64 {
	e := s.memo.take(f.Hash, f.Start, s.flowNow)
	if e == nil {
		return 0 // the table is full: the next record counts it all
	}
	pkts, bytes := x.pkts64, x.bytes64
	x.pkts, x.wireLen = clamp32(sub0(pkts, e.pkts)), clamp32(sub0(bytes, e.bytes))
	var n uint64
	if x.pkts > 0 {
		n = s.flowPackets(set, x)
	}
	n += s.leaveS0(set, x, f, e)
	prev := f.Start
	if e.end != 0 {
		prev = e.end
	}
	e.pkts, e.bytes, e.last, e.end, e.every = pkts, bytes, s.flowNow, f.End, max(f.End-prev, 0)
	return n
}

// flowAnswered takes a flow that left S0 out of the half-open count, and
// remembers that it did (a new entry has counted no packets yet), so
// that the flow's later records do not take it out again.
func (s *Shard) flowAnswered(set *Set, x *packetCtx, f *record.Flow) uint64 {
	e := s.memo.take(f.Hash, f.Start, s.flowNow)
	if e == nil {
		return 0 // the table is full: the next record takes it out
	}
	e.last = s.flowNow
	return s.leaveS0(set, x, f, e)
}

// leaveS0 takes a flow that started in S0 and is out of it now out of
// the half-open count, once: e remembers it.
func (s *Shard) leaveS0(set *Set, x *packetCtx, f *record.Flow, e *memoEntry) uint64 {
	if startState(f) != acsm.S0 || f.State == acsm.S0 || e.leftS0 {
		return 0
	}
	x.ev.Prev = acsm.S0
	var n uint64
	for _, r := range set.onChange {
		if r.Kind == KindThreshold && r.Threshold.Event == EventHalfOpen {
			n++
			s.changed(r, x)
		}
	}
	e.leftS0 = true
	return n
}

// flowEnded counts a flow's final record: its packets and bytes since its
// previous record, the change from its start state to its final state,
// its anomalies.
func (s *Shard) flowEnded(set *Set, x *packetCtx, f *record.Flow) uint64 {
	pkts, bytes := x.pkts64, x.bytes64
	var cpkts, cbytes uint64
	if e := s.memo.find(f.Hash, f.Start); e != nil {
		cpkts, cbytes, x.leftS0 = e.pkts, e.bytes, e.leftS0
		*e = memoEntry{}
	}
	x.pkts, x.wireLen = clamp32(sub0(pkts, cpkts)), clamp32(sub0(bytes, cbytes))
	var n uint64
	if x.pkts > 0 {
		n = s.flowPackets(set, x)
	}
	x.ev.Prev = startState(f)
	if pkts <= 1 {
		x.ev.Anomalies = 0 // its only packet's: the start fired them
	}
	return n + s.step(set, x, false)
}

// flowPackets runs the packet and volume rules on x's packets and bytes.
// A rule that counts a late record in a later window moves x.t there for
// its alert (count): the next rule starts from the record's time again.
func (s *Shard) flowPackets(set *Set, x *packetCtx) uint64 {
	t := x.t
	for _, r := range set.holdAll {
		s.count(r, x)
		x.t = t
	}
	for _, r := range set.onPacket {
		if r.Match.matches(x) {
			s.count(r, x)
			x.t = t
		}
	}
	return uint64(len(set.holdAll) + len(set.onPacket))
}

// startState is the conn_state a flow's first packet gave it, as far as
// its record tells (its history's first letter is the first packet's):
// S0 for a TCP flow opened by a bare SYN and for a UDP flow (the
// originator spoke first), SH for a TCP flow whose first packet was a
// FIN, OTH otherwise (the Zeek machine's answers, acsm/zeek.go).
func startState(f *record.Flow) acsm.ConnState {
	switch f.Proto {
	case capture.ProtoUDP:
		return acsm.S0
	case capture.ProtoTCP:
		var b [1]byte
		if f.History.Len() > 0 {
			switch f.History.AppendTo(b[:0])[0] {
			case 'S':
				return acsm.S0
			case 'F':
				return acsm.SH
			}
		}
	}
	return acsm.OTH
}

func clamp32(v uint64) uint32 { return uint32(min(v, math.MaxUint32)) }

// sub0 is a-b, or 0 when b is larger.
func sub0(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

// flowMemo remembers, for the flows that had an interim record or left
// S0, what their records counted so far and whether their leaving S0 was
// counted, keyed by flow hash and first packet time (a 5-tuple's later
// flow is another): memoSize entries of 64 bytes (1 MiB), made at the
// first event that needs one. The flows longer than the active timeout
// and the open flows that were answered are there. An entry is freed at
// its flow's end, or taken over by another flow once its own has had no
// record for memoStale (past the default idle timeout of an established
// flow, an hour, and the sweep that finds it) and twice the time between
// its last two records (the active timeout): its end's event was lost. A
// live flow whose entry was taken over counts its earlier interim records
// again, and leaves S0 again at its end.
type flowMemo struct{ slots []memoEntry }

type memoEntry struct {
	h           uint64 // flow hash | 1; 0: free
	start, last int64  // the flow's first packet time; the shard's clock at its last record or answer
	// end is the last packet time of the flow's last record; every, the
	// time between its last two records (about the active timeout).
	end, every  int64
	pkts, bytes uint64 // counted so far
	leftS0      bool   // taken out of the half-open count
}

const (
	memoSize   = 1 << 14
	memoProbes = 8
	memoStale  = int64(2 * time.Hour)
)

// find returns the flow's entry, nil if it has none.
func (m *flowMemo) find(h uint64, start int64) *memoEntry {
	if m.slots == nil {
		return nil
	}
	k := h | 1
	for i := range uint64(memoProbes) {
		e := &m.slots[(k+i)&(memoSize-1)]
		if e.h == k && e.start == start {
			return e
		}
	}
	return nil
}

// take returns the flow's entry, made if it has none (now is the shard's
// clock); nil when its slots are all held by other live flows.
func (m *flowMemo) take(h uint64, start, now int64) *memoEntry {
	if e := m.find(h, start); e != nil {
		return e
	}
	if m.slots == nil {
		m.slots = make([]memoEntry, memoSize)
	}
	k := h | 1
	for i := range uint64(memoProbes) {
		e := &m.slots[(k+i)&(memoSize-1)]
		if e.h == 0 || now-e.last > memoStale+2*e.every {
			*e = memoEntry{h: k, start: start}
			return e
		}
	}
	return nil
}
