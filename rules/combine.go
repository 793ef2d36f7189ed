package rules

import (
	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
)

// The rules run on every packet (volume, and threshold on packets) would
// otherwise add each packet to a shared count-min sketch: d counters in
// d cache lines, each updated with an atomic compare-and-swap, tens of
// nanoseconds a packet. A shard instead sums a key's packets in a small
// direct-mapped table of its own and adds the sum to the sketch in one
// step when the sum reaches a sixteenth of the rule's threshold, when
// another key takes its slot, when the window changes, and every
// sweepEvery of packet time. So a key's count reaches the sketch in
// whole, a sixteenth of the threshold late at most, and the sketch sees
// one update per burst instead of one per packet (write combining).
const sumsSize = 1024

type pendingSum struct {
	h    uint64 // the alert hash of (rule, key); 0: empty
	key  uint64
	r    *rule
	win  int64  // the window the sum belongs to
	n    uint32 // summed, not yet in the sketch
	flow flowFacts
}

// flowFacts are what an alert needs of the packet that raised it.
type flowFacts struct {
	orig      capture.Key
	state     acsm.ConnState
	anomalies acsm.Anomaly
	t         int64
}

// combine adds n for key to r's count, through the shard's sums.
func (s *Shard) combine(r *rule, x *packetCtx, key uint64, n uint32) {
	h := alertHash(r.id, key)
	e := &s.sums[h%sumsSize]
	win := r.st.win.index(x.t)
	if e.h != h || e.r != r || e.win != win {
		s.flushSum(e)
		e.h, e.key, e.r, e.win = h, key, r, win
		// The key's first packet in the sum stands for it in an alert
		// (its flow, for by_flow; one of its flows otherwise).
		e.flow = flowFacts{orig: *x.origin(), state: x.state, anomalies: x.anomalies}
	}
	e.flow.t = x.t
	e.n += n
	if e.n < n { // wrapped
		e.n = ^uint32(0)
	}
	if float64(e.n) >= max(1, r.above()/16) {
		s.flushSum(e)
	}
}

// flushSum adds e's sum to its rule's sketch, firing on the crossing of
// the threshold.
func (s *Shard) flushSum(e *pendingSum) {
	if e.n == 0 {
		return
	}
	r := e.r
	before, after := r.st.counts[slot(e.win)].add(e.key, 0, e.n)
	e.n = 0
	if above := r.above(); before <= above && after > above {
		f := &e.flow
		x := packetCtx{t: f.t, fixed: f, state: f.state, anomalies: f.anomalies}
		s.fire(r, &x, e.key, after)
	}
}
