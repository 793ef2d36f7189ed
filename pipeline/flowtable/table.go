package flowtable

import (
	"math"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/pipeline/flowcount"
	"github.com/flowmon/flowmon/record"
)

// Table is the shard's exact view of its open flows: first and last
// packet time and packets each way, for the flow records, the flow count
// and conn_states by flow. Like Zeek's connection table it holds the flows
// that are open: an ended flow leaves once its record is written, an open
// one when it has been idle past its timeout (its record then carries the
// state it had), and the table never holds more than maxFlows: at the cap
// a flow close to its timeout is timed out early. So memory follows the
// configured capacity, not the trace's length or a flood.
//
// A 5-tuple is split into connections as Zeek splits it: a SYN on a flow
// one side of which closed or reset starts a new flow (the ACSM's
// Event.Reused: the old flow's record is written then, ended), and so
// does any packet once an ended flow's linger (Zeek's tcp_close_delay) is
// over: the table then writes the record and has the ACSM forget the flow
// (Tracker.ForgetEnded), so that its next packet is new to every backend,
// which key flows by hash alone. The new flow gets a new uid (its first
// packet's time is in it) and its own slot, record and flow count entry;
// a SYN sent again with the same sequence number on an open flow is not a
// reuse, as in Zeek, and neither is a SYN that dedup drops as a copy of
// one within its window. Zeek's reuse by a new initial sequence number on
// an open connection is not made (the ACSM keeps no sequence numbers).
//
// The flows live in a fixed open-addressing table (slots.go). Idle
// flows are found by a clock hand that passes a few slots at every packet
// and the whole table at least once per sweepEvery of packet time; a flow
// met past its deadline before the hand gets to it is timed out then. At
// the cap, the flow with the earliest deadline among a sample of
// evictSample goes. So each packet costs O(1) amortized, and which flow
// goes when depends only on the packets and their times: the flow log is
// the same from run to run.
type Table struct {
	mem      *offHeap // meta, slots, recs, free and ended
	meta     []slotMeta
	slots    []flowSlot
	recs     []recordFields     // beside slots, the same index; nil without record sinks
	counter  *flowcount.Counter // counts each flow's packets per window (flushCount)
	free     []uint32           // released slots, reused last first
	fresh    uint32             // slots[fresh:] have never been used
	count    int                // flows held
	distinct uint64             // flows started (records, as Zeek counts connections)
	states   map[string]uint64  // flows by final conn_state (filled by finish)
	byState  [256]uint64        // flows by final conn_state, while running
	evicted  uint64             // open flows timed out by the table
	atCap    uint64             // of which timed out early at the cap
	shedSYNs uint64             // flows not entered at the cap (shed)
	maxFlows int
	idleNew  int64 // timeout (ns) of a flow in S0, SH, SHR or unknown
	idleEst  int64 // timeout of the others
	// The clock: hand is the next slot it looks at; lastNow the latest
	// packet time, and frac the part of a slot it owes for the time since.
	hand    int
	lastNow int64
	frac    int64
	// ended flows wait linger (packet time) for their stragglers before
	// their record is written, oldest first: a ring of capacity maxFlows.
	ended  []endedFlow
	head   int // ended[head] is the oldest
	nEnded int
	linger int64
	out    Out // where records go; nil without record sinks
	// tracker, when set, forgets a flow whose linger is over (flushOne).
	tracker *acsm.Tracker
	// parent is the tunnel parent of the packet in hand (SetParent),
	// which a flow it starts keeps; lastUID the uid seed of the flow the
	// last packet counted in.
	parent, lastUID uint64
	// parents are the flows' tunnel parents (record.Flow.TunnelParent),
	// beside recs and with them: an array of their own, read only when a
	// flow starts and when its record is written, keeps a record's fields
	// three whole lines.
	parents []uint64
	// activeSec is the active timeout in seconds (0: none): a flow gets
	// an interim record at its first packet activeSec after its start or
	// its last interim record.
	activeSec uint32
}

// endedFlow names an ended flow by its flow hash and uid seed: if the
// slot no longer holds that flow (its 5-tuple started another, or the cap
// timed it out), its record has been written. The hash is the flow's own,
// not its slot tag, which it gives (slotTag), so that the flow counter's
// buckets can be prefetched by it.
type endedFlow struct {
	hash, uid uint64
	at        int64
}

// Linger is how long after its end a flow stays, so that its last
// packets (the ACK of the last FIN) count in it and its record waits for
// them: Zeek's tcp_close_delay. Then it leaves, from the ACSM too
// (Tracker.ForgetEnded), and the 5-tuple's next packet, whatever it is,
// starts a new flow, as Zeek's next connection.
const Linger = 5 * time.Second

// AttemptDelay is how long a TCP flow that began with a pure SYN may go
// without an answer (acsm.S0) before it ends, its record written as an
// attempt: Zeek's tcp_attempt_delay (TCPSessionAdapter::AttemptTimer
// removes the connection then, if the originator is still in SYN_SENT
// and the responder never spoke). The originator's packets after it,
// whatever they are, start a new flow, as they start a new connection
// in Zeek: a one-sided capture of a client that goes on sending has an
// S0 attempt and then its packets after the delay.
const AttemptDelay = 5 * time.Second

// sweepEvery is the longest (packet time) the clock takes to pass every
// slot; sweepStep how many slots it passes at every packet at least.
const (
	sweepEvery = 10 * time.Second
	sweepStep  = 2
)

// Out takes a table's flow records: Next returns the record to fill for
// the flow being written, valid until the next call.
type Out interface {
	Next() *record.Flow
}

// Config is a table's shape and what it works with.
type Config struct {
	// MaxFlows is the most flows the table holds (its cap; at least 1).
	MaxFlows int
	// IdleNew is the idle timeout of a flow in S0, SH, SHR or unknown,
	// IdleEstablished that of the others.
	IdleNew, IdleEstablished time.Duration
	// Counter, when set, counts each flow's packets per window.
	Counter *flowcount.Counter
	// Out, when set, takes the flow records; without it none are kept.
	Out Out
	// Tracker, when set, forgets a flow whose linger is over, as Zeek
	// removes a closed connection.
	Tracker *acsm.Tracker
	// ActiveTimeout, when not 0, gives an open flow an interim record at
	// its first packet that long (whole seconds) after its start or its
	// last interim record.
	ActiveTimeout time.Duration
}

// New makes an empty table. Its memory is mapped outside the Go heap at
// its largest and freed by Finish or Carry (or when the table is
// collected).
func New(c Config) *Table {
	maxFlows := max(c.MaxFlows, 1)
	n := slotCount(maxFlows)
	mem := &offHeap{}
	t := &Table{mem: mem, meta: offHeapSlice[slotMeta](mem, n, true), slots: offHeapSlice[flowSlot](mem, maxFlows, true),
		free:  offHeapSlice[uint32](mem, maxFlows, true)[:0],
		ended: offHeapSlice[endedFlow](mem, maxFlows, true), states: map[string]uint64{}, linger: int64(Linger),
		maxFlows: maxFlows, idleNew: int64(c.IdleNew), idleEst: int64(c.IdleEstablished), lastNow: math.MinInt64,
		counter: c.Counter, tracker: c.Tracker, activeSec: uint32(c.ActiveTimeout / time.Second)}
	mem.freeWith(t)
	if c.Out != nil {
		t.out = c.Out
		t.recs = offHeapSlice[recordFields](mem, maxFlows, false)
		t.parents = offHeapSlice[uint64](mem, maxFlows, false)
	}
	return t
}

// SetParent sets the tunnel parent (a uid seed, 0 for none) of the
// packets that follow: a flow one of them starts keeps it
// (record.Flow.TunnelParent).
func (t *Table) SetParent(uid uint64) { t.parent = uid }

// LastUID is the uid seed of the flow the last packet counted in.
func (t *Table) LastUID() uint64 { return t.lastUID }

// Stats are what a table counted.
type Stats struct {
	// Open is the flows held now; MaxFlows the cap.
	Open, MaxFlows uint64
	// Distinct is the flows started (as Zeek counts connections);
	// TimedOut the open flows the table timed out, AtCap those of them
	// timed out early at the cap, Shed the SYNs of new flows not entered
	// at the cap.
	Distinct, TimedOut, AtCap, Shed uint64
}

// Stats returns the table's counts.
func (t *Table) Stats() Stats {
	return Stats{Open: uint64(t.count), MaxFlows: uint64(t.maxFlows), Distinct: t.distinct, TimedOut: t.evicted,
		AtCap: t.atCap, Shed: t.shedSYNs}
}

// States is the flows by final conn_state, filled by Finish and Carry.
func (t *Table) States() map[string]uint64 { return t.states }

// Packet records one packet and the ACSM's event for it.
func (t *Table) Packet(p *capture.Packet, ev *acsm.Event) {
	// The flow's times are its packets'; its deadlines count on the
	// table's clock, the latest packet time, so that a packet whose time
	// goes back neither times flows out nor puts off their deadlines by
	// the jump, whichever slots the clock hand passes.
	pt := p.Timestamp.UnixNano()
	now := t.Advance(pt)
	tag, k := slotTag(p.Hash), packKey(&p.Key)
	i, found := t.lookup(tag, &k)
	var idx uint32
	var e *flowSlot
	if found {
		idx = t.meta[i].idx
		e = &t.slots[idx]
	}
	switch {
	case !found:
		if t.count >= t.maxFlows && ev.New && OpensHandshake(p) {
			t.shed(p, ev)
			return
		}
		if t.count >= t.maxFlows {
			t.atCap++
			t.timeOut(t.victim(tag), record.EndLackOfResources)
			i = t.freeSlot(tag)
		}
		idx, e = t.start(i, tag, &k, p, pt)
	case ev.Reused || e.ended && ev.New:
		// The 5-tuple is reused after its flow ended or a side closed: a
		// new flow. The old one's record goes out now; an ended flow's
		// queue entry is then skipped.
		if !e.ended {
			t.byState[e.state]++
		}
		t.writeOnce(idx, record.EndOfFlow)
		idx, e = t.start(i, tag, &k, p, pt)
	case now >= t.meta[i].deadline:
		// Idle past its timeout before the clock came by: the flow is
		// over and this packet starts another in its slot.
		t.expire(idx, record.EndIdle)
		idx, e = t.start(i, tag, &k, p, pt)
	}
	origIsDst := e.origIsDst
	t.lastUID = e.uid
	e.win++
	if t.recs != nil {
		// The orientation as the backend answered; when it could not
		// tell, the flow keeps the one it had (a new flow: its sender
		// originates).
		r := &t.recs[idx]
		first := r.pkts[0]+r.pkts[1] == 0
		switch {
		case ev.Result != acsm.Unknown:
			origIsDst = ev.OrigIsDst
		case first:
			origIsDst = p.Reversed
		}
		r.conn.Observe(p, origIsDst, first)
		r.last = pt
		r.pkts[b2i(p.Reversed)]++
		if ev.Result == acsm.Unknown {
			r.unknown++
		}
	}
	if e.ended {
		return // a straggler after the end (the last ACK)
	}
	// The state as the backend answered it at the flow's latest packet: an
	// open flow's record carries it, even if the flow has aged out since.
	e.state, e.origIsDst = ev.State, origIsDst
	if t.activeSec > 0 && t.recs != nil && !ev.Ended {
		t.interim(idx, now)
	}
	if !ev.Ended {
		switch {
		case t.meta[i].deadline == maxTime && ev.State == acsm.S0 && OpensHandshake(p):
			// An attempt's deadline is fixed at its SYN: the originator's
			// later packets do not put it off, as they do not cancel
			// Zeek's attempt timer.
			e.attempt = true
			t.meta[i].deadline = now + int64(AttemptDelay)
		case e.attempt && ev.State == acsm.S0:
		default:
			e.attempt = false
			t.meta[i].deadline = now + t.timeout(e.state)
		}
		return
	}
	e.ended = true
	t.meta[i].deadline = maxTime // the ended queue writes it
	t.byState[ev.State]++
	if t.nEnded == len(t.ended) {
		t.flushOne() // the queue is full: the oldest goes out early
	}
	t.ended[(t.head+t.nEnded)%len(t.ended)] = endedFlow{hash: p.Hash, uid: e.uid, at: now}
	t.nEnded++
}

// interim writes an interim record of the open flow in flowSlot idx when
// its active timeout has passed since its start or its last one. The
// record carries the flow's counts since its start, as its final record
// will: a collector keeps the latest of a uid's records.
func (t *Table) interim(idx uint32, now int64) {
	r := &t.recs[idx]
	// A multiplication a packet; the division only when a record is due.
	if now-r.first < int64(r.interimAt+t.activeSec)*1e9 {
		return
	}
	r.interimAt = uint32(min((now-r.first)/1e9, math.MaxUint32))
	t.write(idx, record.EndActive)
}

// opensHandshake reports whether p is a TCP SYN without ACK: the first
// packet of a handshake, and all a spoofed SYN flood sends.
func OpensHandshake(p *capture.Packet) bool {
	return p.HasTCP && p.Flags&(capture.SYN|capture.ACK) == capture.SYN
}

// shed counts a new flow that the table, at its cap, does not enter: one
// whose first packet is a SYN. Under a flood of spoofed SYNs each is such
// a flow, and taking a slot for it would time out another flow early to
// hold one that will never send again; so at the cap a handshake gets a
// slot only at its next packet (the SYN-ACK, or the SYN sent again),
// which the ACSM, holding the flow's state from its SYN, answers as not
// new. The SYN still counts: in the flow counter at once (a prefetch
// brought its buckets in, PrefetchFlow; a full window's filter drops it
// unlooked, Counter.AddNew), and in the flows and conn_states
// at its state (S0), as the record it would have had. A flow that then
// goes on is written from that next packet, its SYN left out of its
// record's packets and history, and counts again there, as a flow timed
// out and resumed does.
func (t *Table) shed(p *capture.Packet, ev *acsm.Event) {
	t.shedSYNs++
	t.distinct++
	t.byState[ev.State]++
	if t.counter != nil {
		t.counter.AddNew(p.Hash, 1)
	}
}

// start enters a new flow at its first packet in slot i, empty or holding
// a flow whose record is written (whose flowSlot it takes over), and
// returns its flowSlot and the slot's index.
func (t *Table) start(i int, tag uint64, k *packedKey, p *capture.Packet, now int64) (uint32, *flowSlot) {
	idx := t.meta[i].idx
	if t.meta[i].hash == 0 {
		t.count++
		if n := len(t.free); n > 0 {
			idx, t.free = t.free[n-1], t.free[:n-1]
		} else {
			idx = t.fresh
			t.fresh++
		}
	}
	if t.meta[i].hash != 0 {
		t.flushCount(idx) // the flow whose slot this one takes over
	}
	t.meta[i] = slotMeta{hash: tag, deadline: maxTime, idx: idx}
	e := &t.slots[idx]
	*e = flowSlot{key: *k, uid: uidSeed(p), hash: p.Hash}
	if t.recs != nil {
		t.recs[idx] = recordFields{first: now}
		t.parents[idx] = t.parent
	}
	t.distinct++
	return idx, e
}

// timeout is the idle timeout of a flow in state s: as the ACSM's tiers,
// a handshake still open or one side only times out fast, a flow both
// sides spoke in slowly.
func (t *Table) timeout(s acsm.ConnState) int64 {
	if IdleNew(s) {
		return t.idleNew
	}
	return t.idleEst
}

// IdleNew reports whether a flow in state s times out after
// Config.IdleNew (a handshake still open, or one side only), not after
// IdleEstablished.
func IdleNew(s acsm.ConnState) bool {
	switch s {
	case acsm.S0, acsm.SH, acsm.SHR, acsm.ConnUnknown:
		return true
	}
	return false
}

// timeOut writes the record of the flow in slot i and removes it: an open
// flow timed out, or at the cap any flow.
func (t *Table) timeOut(i int, why record.EndReason) {
	t.expire(t.meta[i].idx, why)
	t.remove(i)
}

// expire writes the record of the flow in flowSlot idx, which leaves
// before its end or linger is over.
func (t *Table) expire(idx uint32, why record.EndReason) {
	if e := &t.slots[idx]; !e.ended {
		t.byState[e.state]++
		t.evicted++
	}
	t.writeOnce(idx, why)
}

// Advance moves the table's clock to now (packet time, UnixNano), if now
// is past it, and returns the clock: the records of flows whose linger is
// over are written, and the clock hand
// times out the idle flows it passes. Packet does it at each packet; a
// live shard whose source is quiet, with the wall clock.
func (t *Table) Advance(now int64) int64 {
	now = max(now, t.lastNow)
	t.flushEnded(now)
	t.tick(now)
	return now
}

// tick moves the clock hand: sweepStep slots, and more as packet time
// passes, so that it goes round the table at least every sweepEvery.
// Flows past their deadline are timed out as it passes them.
func (t *Table) tick(now int64) {
	n := int64(len(t.meta))
	steps := int64(sweepStep)
	if now > t.lastNow {
		if t.lastNow != math.MinInt64 {
			if dt := now - t.lastNow; dt >= int64(sweepEvery) {
				steps = n
			} else {
				t.frac += dt * n
				steps += t.frac / int64(sweepEvery)
				t.frac %= int64(sweepEvery)
			}
		}
		t.lastNow = now
	}
	for steps = min(steps, n); steps > 0; steps-- {
		m := &t.meta[t.hand]
		if m.hash != 0 && now >= m.deadline {
			t.timeOut(t.hand, record.EndIdle) // another flow may move into the slot: look again
			continue
		}
		t.hand = t.next(t.hand)
	}
}

// FlushEnded writes the records of flows that ended more than linger
// before now (packet time, UnixNano) and has the ACSM forget them: a
// caller that runs the ACSM on a packet before Packet calls it first, so
// that a packet of a flow whose linger is over is new to the ACSM too.
func (t *Table) FlushEnded(now int64) {
	t.flushEnded(max(now, t.lastNow)) // on the table's clock, as Advance
}

// flushEnded writes the records of flows that ended more than linger
// before now.
func (t *Table) flushEnded(now int64) {
	for t.nEnded > 0 && now-t.ended[t.head].at >= t.linger {
		t.flushOne()
	}
}

// endedAhead is how many ended flows ahead of the one it writes flushOne
// prefetches the slots for, and twice that the metas.
const endedAhead = 4

// flushOne writes the oldest ended flow's record and removes the flow, if
// its slot still holds it.
func (t *Table) flushOne() {
	f := t.ended[t.head]
	// The queue is in order: the flows a few places on go out at the next
	// packets, ended seconds ago and out of cache by now; start loading
	// their metas and, through the metas loaded before, their slots and
	// the flow counter's buckets their window counts go to (remove).
	if t.nEnded > 2*endedAhead {
		t.PrefetchHome(t.ended[(t.head+2*endedAhead)%len(t.ended)].hash)
		next := t.ended[(t.head+endedAhead)%len(t.ended)].hash
		t.PrefetchFlow(next, false)
		if t.counter != nil {
			t.counter.Prefetch(next)
		}
	}
	if i := t.find(slotTag(f.hash), f.uid); i >= 0 {
		t.writeOnce(t.meta[i].idx, record.EndOfFlow)
		t.remove(i) // its stragglers are in; the flow is done
		if t.tracker != nil {
			// As Zeek removes the connection: its next packet opens
			// another.
			t.tracker.ForgetEnded(f.hash)
		}
	}
	if t.head++; t.head == len(t.ended) {
		t.head = 0
	}
	t.nEnded--
}

func (t *Table) writeOnce(idx uint32, why record.EndReason) {
	if e := &t.slots[idx]; !e.written {
		e.written = true
		t.write(idx, why)
	}
}

// EndLingers writes the record of every ended flow whose linger is not
// over and removes it, from the ACSM too, as flushOne does when the linger
// ends: a run that stops has no stragglers to wait for.
func (t *Table) EndLingers() {
	for t.nEnded > 0 {
		t.flushOne()
	}
}

// Finish writes a record for every flow still open, in the table's order
// (which the packets decide), with its latest state, and frees the table.
func (t *Table) Finish() {
	t.EndLingers()
	t.FlushCounts()
	for i := range t.meta {
		if t.meta[i].hash == 0 {
			continue
		}
		if idx := t.meta[i].idx; !t.slots[idx].ended {
			t.byState[t.slots[idx].state]++
			t.writeOnce(idx, record.EndForced)
		}
	}
	t.meta, t.slots, t.recs, t.parents, t.free, t.ended, t.count, t.nEnded = nil, nil, nil, nil, nil, nil, 0, 0
	t.mem.free()
	t.publishStates()
}

// publishStates adds the flows counted by final conn_state to states.
func (t *Table) publishStates() {
	for s, n := range t.byState {
		if n > 0 {
			t.states[acsm.ConnState(s).String()] += n
		}
	}
	t.byState = [256]uint64{}
}

// write fills the record of the flow in flowSlot idx, written for why (a
// flow that ended and then timed out or was pushed out is still one that
// ended): its fields as conn.log has them (connfields.go: Zeek's rules
// for bytes, history and missed_bytes), directed from the originator.
// The Community ID is left to the delivery side (a SHA-1 a record, off
// the packet path).
func (t *Table) write(idx uint32, why record.EndReason) {
	if t.recs == nil {
		return
	}
	e, rec := &t.slots[idx], &t.recs[idx]
	k, origIsDst := e.key.key(), e.origIsDst
	f := t.out.Next()
	f.Start, f.End, f.Hash, f.UID = rec.first, rec.last, e.hash, e.uid
	f.TunnelParent = t.parents[idx]
	f.Orig, f.OrigPort, f.Resp, f.RespPort, f.Proto = k.Src, k.SrcPort, k.Dst, k.DstPort, k.Proto
	f.State = e.state
	f.OrigPkts, f.RespPkts = rec.pkts[0], rec.pkts[1]
	if origIsDst {
		f.Orig, f.OrigPort, f.Resp, f.RespPort = k.Dst, k.DstPort, k.Src, k.SrcPort
		f.OrigPkts, f.RespPkts = rec.pkts[1], rec.pkts[0]
	}
	f.Confidence = 1
	if n := rec.pkts[0] + rec.pkts[1]; rec.unknown > 0 && n > 0 {
		f.Confidence = float32(n-uint64(rec.unknown)) / float32(n)
	}
	rec.conn.Fill(f, k.Proto, origIsDst)
	f.EndReason = why
	if e.ended {
		f.EndReason = record.EndOfFlow
	}
}
