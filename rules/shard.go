package rules

import (
	"sync/atomic"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/capture"
)

// Shard evaluates the rules for one pipeline shard, on its goroutine. It
// implements the engine's consumer hook (Packet, Duplicate, Finish, and
// Flow for the flows kept in the kernel, flow.go) and allocates nothing
// per packet: only an alert that fires for the first time within its
// suppress window is built.
type Shard struct {
	// What every packet touches comes first, in a few cache lines; the
	// tables after them are touched only by some packets.
	eng *Engine
	// The shard's counts: its own, plain (an atomic store is a locked
	// instruction, several nanoseconds a packet), and their copies for
	// other goroutines, published once a second of packet time, before
	// the shard ticks, and at Finish.
	// nLate counts the packets a counting rule left out because their
	// window's slot had been reused (windows.at).
	nEvals, nPackets, nDups, nLate uint64
	evals, packets, dups, late     atomic.Uint64
	// nextFlush is the packet time (ns) the front is next emptied into
	// the manager, so that it learns of repeats within sweepEvery, and
	// set refreshed; nextTick is the engine's, as last read.
	nextFlush, nextTick int64
	set                 *Set
	// holds are the sample-and-hold tables of the set's by_flow volume
	// rules (hold.go), by rule.holdIndex, for holdSet; holdAll, those of
	// set.holdAll, which every packet reads without going through the
	// rules.
	holds   []*holdTable
	holdAll []*holdTable
	holdSet *Set
	// x is the packet being evaluated: a field, reset per packet, not a
	// local the compiler would zero whole each time.
	x packetCtx
	// For flow events (flow.go): the event x reads, the latest time the
	// events carried (the shard's clock), and what interim records
	// counted.
	fev     acsm.Event
	flowNow int64
	memo    flowMemo
	// lk answers watchlist and novelty rules for the new flow in hand.
	lk Lookups

	// front folds an event rule's repeats (an XMAS flood is an anomaly a
	// packet) without taking the manager's lock: a repeat of an alert
	// reported less than a quarter of its suppress window ago is counted
	// here and handed over with the next report.
	front [frontSize]frontEntry
}

const frontSize = 256

type frontEntry struct {
	h, key uint64
	r      *rule
	until  int64  // ns: repeats before this fold here
	last   int64  // ns: the latest repeat folded here
	n      uint64 // repeats folded here, not yet reported
}

// publish copies the shard's counts for other goroutines.
func (s *Shard) publish() {
	s.evals.Store(s.nEvals)
	s.packets.Store(s.nPackets)
	s.dups.Store(s.nDups)
	s.late.Store(s.nLate)
}

// Duplicate counts a packet the dedup stage dropped (duplicates rules).
func (s *Shard) Duplicate(*capture.Packet) { s.nDups++ }

// Packet evaluates the rules on an admitted packet and the ACSM's event
// for it.
func (s *Shard) Packet(p *capture.Packet, ev *acsm.Event) {
	s.nPackets++
	t := p.Timestamp.UnixNano()
	set := s.set
	if t >= s.nextFlush || t >= s.nextTick {
		set = s.advance(t)
	}
	if set == nil {
		return
	}
	// Per-flow volume rules that match everything (the heavy hitter) first,
	// straight from the packet: most packets need nothing else.
	if s.holdSet != set {
		s.makeHolds(set)
	}
	for i, h := range s.holdAll {
		if n := h.units(p.WireLen); !h.quiet(ev.Hash, t, n) {
			if after, crossed := h.count(ev.Hash, t, n); crossed {
				s.cross(set.holdAll[i], s.context(p, ev, t), ev.Hash, h.start/h.size, float64(after))
			}
		}
	}
	changed := ev.State != ev.Prev && ev.State != acsm.ConnUnknown
	if len(set.onPacket) == 0 && !(ev.New && len(set.onNew)+len(set.onLookup) > 0) && !(changed && len(set.onChange) > 0) && !(ev.Anomalies != 0 && len(set.onAnomaly) > 0) {
		s.nEvals += uint64(len(set.holdAll))
		return
	}
	s.nEvals += uint64(len(set.holdAll)) + s.step(set, s.context(p, ev, t), true)
}

// step evaluates on x the rules its event triggers: with packets, the
// packet and volume rules (but the by_flow ones that match everything,
// which the caller counts); at a new flow, the new-flow and lookup rules;
// at a change of conn_state, the transition and conn_state rules; at
// flag anomalies, the anomaly rules. It returns the rules tried. A packet
// and a flow event (flow.go) go through it alike.
func (s *Shard) step(set *Set, x *packetCtx, packets bool) uint64 {
	ev := x.ev
	var n uint64
	if packets {
		n += s.countPackets(set, x)
	}
	if ev.New {
		for _, r := range set.onNew {
			n++
			if r.Match.matches(x) {
				s.count(r, x)
			}
		}
	}
	if ev.New && len(set.onLookup) > 0 {
		n += uint64(len(set.onLookup))
		s.lookup(set, x)
	}
	if ev.State != ev.Prev && ev.State != acsm.ConnUnknown {
		for _, r := range set.onChange {
			n++
			s.changed(r, x)
		}
	}
	if ev.Anomalies != 0 {
		for _, r := range set.onAnomaly {
			n++
			if ev.Anomalies&r.Anomalies != 0 && r.Match.matches(x) {
				s.fire(r, x, x.key(r.Track), 0)
			}
		}
	}
	return n
}

// advance moves the shard's clock to packet time t, and returns the set
// in effect (nil: none). Once a second of packet time it reports what
// the front folded and takes the engine's set (a reload is seen within
// the second); between, the shard reads only its own copies, so a packet
// touches no line of the engine's. Past the engine's next tick, it ticks.
func (s *Shard) advance(t int64) *Set {
	if t >= s.nextFlush {
		s.flushAll()
		s.publish()
		s.nextFlush = t + sweepEvery
		s.set = s.eng.set.Load()
		s.nextTick = minInt64
	}
	set := s.set
	if set == nil {
		return nil
	}
	if t >= s.nextTick {
		if t >= s.eng.nextTick.Load() {
			s.publish()
			s.eng.tick(t)
		}
		s.nextTick = s.eng.nextTick.Load()
	}
	return set
}

// countPackets runs the packet and volume rules (but the by_flow ones that
// match everything) on x, and returns how many.
func (s *Shard) countPackets(set *Set, x *packetCtx) uint64 {
	for _, r := range set.onPacket {
		if r.Match.matches(x) {
			s.count(r, x)
		}
	}
	return uint64(len(set.onPacket))
}

// context fills the shard's packet context for p.
func (s *Shard) context(p *capture.Packet, ev *acsm.Event, t int64) *packetCtx {
	x := &s.x
	x.ev, x.origOK, x.hashed, x.t, x.flow = ev, false, 0, t, false
	x.proto, x.isTCP, x.flags, x.wireLen, x.pkts = p.Key.Proto, p.Key.Proto == capture.ProtoTCP && p.HasTCP, p.Flags, p.WireLen, 1
	return x
}

// packetCtx is one packet as the rules see it. The flow from originator
// to responder is made only when a rule reads it (origin): most packets
// meet only rules that need neither addresses nor ports. The event's
// fields are read through ev; the packet's few are copied, so that p
// stays off the heap. (ev escapes to
// the heap through what an alert keeps of it: the pipeline's events live
// there anyway.)
type packetCtx struct {
	ev     *acsm.Event
	origOK bool
	// hashed says which of srcH, dstH (the originator's and responder's
	// address hashes, which several rules key on) are made.
	hashed     uint8
	srcH, dstH uint64
	// t is the packet's time, ns: alerts' times are made from it (utc), not
	// from p.Timestamp, whose location pointer would make p escape.
	t     int64
	orig  capture.Key // the flow from originator to responder, once origOK
	proto uint8
	isTCP bool
	flags capture.TCPFlags
	// wireLen and pkts are the bytes and packets the packet and volume
	// rules count: a packet's own, or a flow record's since the flow's
	// previous one.
	wireLen, pkts uint32
	// flow says x is a flow event (flow.go), whose fields follow.
	flow bool
	// novel is a start's Event.Novel; leftS0 says an earlier record of
	// the flow took it out of the half-open count; start is the flow's
	// first packet time (ns), whose window the half-open count's
	// decrement goes to.
	novel, leftS0 bool
	start         int64
	// pkts64 and bytes64 are the flow's record's totals (bytes as frame
	// bytes).
	pkts64, bytes64 uint64
}

// origin returns the flow from originator to responder.
func (x *packetCtx) origin() *capture.Key {
	if !x.origOK {
		x.orig = x.ev.Originator()
		x.origOK = true
	}
	return &x.orig
}

// srcHash is the hash of the originator's address, made once a packet.
func (x *packetCtx) srcHash() uint64 {
	if x.hashed&1 == 0 {
		x.srcH = addrHash(x.origin().Src)
		x.hashed |= 1
	}
	return x.srcH
}

// dstHash is the hash of the responder's address, made once a packet.
func (x *packetCtx) dstHash() uint64 {
	if x.hashed&2 == 0 {
		x.dstH = addrHash(x.origin().Dst)
		x.hashed |= 2
	}
	return x.dstH
}

// key is the hash of the packet's tracked key.
func (x *packetCtx) key(t Track) uint64 {
	switch t {
	case BySrc:
		return x.srcHash()
	case ByDst:
		return x.dstHash()
	case ByPair:
		return pairOf(x.srcHash(), x.dstHash())
	}
	return x.ev.Hash
}

// count adds the packet's event to a counting rule, firing on the
// crossing of its threshold.
func (s *Shard) count(r *rule, x *packetCtx) {
	st := r.st
	if r.holdIndex >= 0 {
		h := s.holds[r.holdIndex]
		n := x.pkts
		if h.bytes {
			n = x.wireLen
		}
		if x.flow {
			// A record behind the current window counts in it (flow.go):
			// the table holds one window.
			if c := st.win.cur.Load(); c != noWindow {
				x.t = max(x.t, c*st.win.size)
			}
			x.t = max(x.t, h.start)
		}
		if after, crossed := h.count(x.ev.Hash, x.t, n); crossed {
			s.cross(r, x, x.ev.Hash, h.start/h.size, float64(after))
		}
		return
	}
	w, ok := st.win.at(x.t)
	if !ok {
		if !x.flow {
			s.nLate++
			return
		}
		// A flow's record comes after its last packet (an idle flow's, its
		// timeout later): what its window can no longer take goes to the
		// current one (flow.go).
		w = st.win.cur.Load()
		x.t = max(x.t, w*st.win.size)
	}
	sl := slot(w)
	key := x.key(r.Track)
	// A key that crossed the threshold in this window holds its alert for
	// the window (endWindow): counting it further changes nothing a user
	// sees but the repeats folded into the alert. So it is not counted:
	// under a flood to one victim every SYN would otherwise update the
	// victim's counters, lines that two shards' cores take from each
	// other at each write.
	mark := &st.over[key%overSlots]
	over := overMark(key, w)
	if mark.Load() == over {
		return
	}
	var before, after float64
	switch r.Kind {
	case KindVolume:
		n := x.pkts
		if r.Volume.Measure == Bytes {
			n = x.wireLen
		}
		before, after = st.counts[sl].add(key, 0, n)
	case KindThreshold:
		switch r.Threshold.Event {
		case EventDistinctDstPorts:
			before, after = st.counts[sl].add(key, portHash(x.origin().DstPort), 1)
		case EventDistinctDstHosts:
			before, after = st.counts[sl].add(key, x.dstHash(), 1)
		case EventDistinctSrcHosts:
			before, after = st.counts[sl].add(key, x.srcHash(), 1)
		case EventAttempt, EventHalfOpen:
			if !x.isTCP || x.flags&(capture.SYN|capture.ACK) != capture.SYN {
				return
			}
			fallthrough
		default:
			n := uint32(1)
			if r.Threshold.Event == EventPacket {
				n = x.pkts
			}
			before, after = st.counts[sl].add(key, 0, n)
			if st.done[sl] != nil {
				if after <= r.thresh {
					return // half-open is at most the attempts: no crossing
				}
				d := st.done[sl].estimate(key)
				before, after = before-d, after-d
			}
		}
	}
	if before <= r.thresh && after > r.thresh {
		mark.Store(over)
		s.cross(r, x, key, w, after)
	}
}

// changed handles a packet that changed its flow's conn_state.
func (s *Shard) changed(r *rule, x *packetCtx) {
	switch {
	case r.Kind == KindTransition:
		if r.Transition.To.Has(x.ev.State) && (r.Transition.From == 0 || r.Transition.From.Has(x.ev.Prev)) &&
			r.Match.matches(x) {
			s.fire(r, x, x.key(r.Track), 0)
		}
	case r.Threshold.Event == EventHalfOpen:
		// An answer (or a reset) takes the flow out of the half-open count.
		if x.ev.Prev == acsm.S0 && !(x.flow && x.leftS0) && r.Match.matchesFlow(x) {
			at := x.t
			if x.flow {
				at = x.start // with the attempt it undoes, late as it comes (flow.go)
			}
			w, ok := r.st.win.at(at)
			if !ok {
				s.nLate++
				return
			}
			r.st.done[slot(w)].add(x.key(r.Track), 0, 1)
		}
	case r.Threshold.Event == EventConnState:
		if r.Match.matches(x) {
			s.count(r, x)
		}
	}
}

// cross raises counting rule r's alert for key, whose count went over
// the threshold in window w. A key crosses once a window: no front, and
// the manager learns of each crossing at once (window ends check it).
func (s *Shard) cross(r *rule, x *packetCtx, key uint64, w int64, value float64) {
	o := r.occurrence(alertHash(r.id, key), key, utc(x.t))
	o.Crossing, o.Window = true, w
	if !s.eng.mgr.Fold(o, 1) {
		s.eng.mgr.Fire(o, r.build(*x.origin(), x.ev.State, x.ev.Anomalies, x.t, value, s.eng.cidSeed))
	}
}

// fire raises event rule r's alert for key, unless it repeats one
// reported moments ago (the front folds it).
func (s *Shard) fire(r *rule, x *packetCtx, key uint64, value float64) {
	h := alertHash(r.id, key)
	fe := &s.front[h%frontSize]
	if fe.h == h && fe.r == r && x.t < fe.until {
		fe.n++
		fe.last = x.t
		return
	}
	s.flush(fe)
	o := r.occurrence(h, key, utc(x.t))
	firing := s.eng.mgr.Fold(o, 1)
	if !firing {
		firing = s.eng.mgr.Fire(o, r.build(*x.origin(), x.ev.State, x.ev.Anomalies, x.t, value, s.eng.cidSeed))
	}
	hold := r.Suppress / 4
	if !firing {
		hold = r.For / 16 // pending: report often enough to see it hold
	}
	*fe = frontEntry{h: h, key: key, r: r, until: x.t + int64(hold), last: x.t}
}

func (s *Shard) flushAll() {
	for i := range s.front {
		s.flush(&s.front[i])
	}
}

// flush reports what fe folded.
func (s *Shard) flush(fe *frontEntry) {
	if fe.n > 0 {
		s.eng.mgr.Fold(fe.r.occurrence(fe.h, fe.key, utc(fe.last)), fe.n)
		fe.n = 0
	}
}

func (r *rule) occurrence(h, key uint64, now time.Time) alerts.Occurrence {
	return alerts.Occurrence{Hash: h, Key: key, Rule: r.Alert, Severity: r.Severity, Suppress: r.Suppress, For: r.For, Now: now}
}

// Idle ends, as a packet at now would, the windows now has passed while
// the shard's source was quiet: counting rules' alerts resolve, and the
// engine's other shards see the tick, on a quiet link too.
func (s *Shard) Idle(now time.Time) {
	t := now.UnixNano()
	s.flushAll()
	s.publish()
	if s.set != nil && t >= s.eng.nextTick.Load() {
		s.eng.tick(t)
	}
	s.nextTick = s.eng.nextTick.Load()
}

// Finish reports what the shard's front still holds; the last shard to
// finish ends the duplicates rules' last (partial) window.
func (s *Shard) Finish(end time.Time) error {
	s.flushAll()
	s.publish()
	e := s.eng
	e.mu.Lock()
	e.finished++
	last := e.finished == len(e.shards)
	e.mu.Unlock()
	if last {
		if set := e.set.Load(); set != nil {
			for _, r := range set.dups {
				e.endDupWindow(r, end.UnixNano(), true)
			}
		}
	}
	return nil
}

// utc is packet time t (ns) as a time in UTC.
func utc(t int64) time.Time { return time.Unix(0, t).UTC() }

// makeHolds makes the shard's sample-and-hold tables for the by_flow
// volume rules of set, the set now in effect: a reload that brings a new
// set brings new tables (a rule's table is per set: its counts restart).
func (s *Shard) makeHolds(set *Set) {
	s.holds, s.holdAll, s.holdSet = make([]*holdTable, set.nHold), nil, set
	for _, r := range set.rules {
		if r.holdIndex >= 0 {
			s.holds[r.holdIndex] = newHoldTable(r.Volume.Above, r.Volume.Window, r.Volume.Measure == Bytes, r.id)
		}
	}
	for _, r := range set.holdAll {
		s.holdAll = append(s.holdAll, s.holds[r.holdIndex])
	}
}
