package rules

import (
	"math"
	"time"

	"github.com/flowmon/flowmon/internal/hashmix"
	"github.com/flowmon/flowmon/internal/period"
)

// A volume rule tracked by flow counts every packet of every flow, and a
// flow's packets all reach one shard. So instead of the shared count-min
// sketch (three cache lines and four atomic operations a packet, on as
// many flows as the traffic has), each shard holds such a rule's counts
// with sample and hold (Estan and Varghese, "New directions in traffic
// measurement and accounting", SIGCOMM 2002, Section 3.1): a packet of a
// flow not yet held is sampled with probability 1-(1-p)^size, p = O/T
// per byte (T the rule's threshold, O the oversampling); once sampled,
// the flow is held in a small table and every later packet of it is
// counted exactly. The count misses the bytes G before the sample,
// exponential with mean 1/p = T/O. flowmon compares the count itself,
// a lower bound, with the threshold (not the paper's unbiased count +
// 1/p), so a flow of T bytes or fewer never fires, and a flow of S > T
// bytes fires with probability 1-e^-(p(S-T)): O = 8 gives 98% at 1.5T
// and 99.97% at 2T. The table holds about O·B/T flows a window, B the
// window's bytes (3 GB a minute at 5 MB: 4,800); when it is full a
// sampled flow is not held, and counted (full). Per packet: a bit of an
// 8 KB bitmap of the held flows, which stays in the first-level cache
// (the table itself only for the flows it may hold), no atomic
// operation, and a random draw (holdTable.quiet, inlined).
const (
	oversampling = 8
	holdSize     = 1 << 13 // entries a shard holds per rule: 8192 (128 KB)
	holdProbes   = 8
	holdBits     = 1 << 16                  // the bitmap of held flows: 8 KB
	holdBytes    = holdSize*16 + holdBits/8 // a table's memory
)

type held struct {
	h     uint64 // flow hash | 1; 0: empty
	count uint64 // bytes (or packets) counted since held
}

// holdTable is one volume rule's sample-and-hold table on one shard.
type holdTable struct {
	// What quiet reads comes first, on the line it reads anyway: the
	// window the counts belong to, [start, start+span) in ns, aligned as
	// the rule's (windows.index; span is 0 until the first packet rolls
	// the table into its window), and the draw's parameters. A packet of
	// n units, n < smallN, is sampled when its 53-bit draw is below n·p53
	// (p·2^53): n·p is 1-(1-p)^n to within 0.5% there. Larger packets
	// take the exponential (sample).
	start  int64
	span   uint64
	seed   uint64
	p53    uint64
	smallN uint32
	bytes  bool    // the rule counts bytes, not packets
	above  uint64  // the rule's threshold, rounded down: a count crosses it going over
	size   int64   // the window's length, ns
	p      float64 // sampling probability per unit (byte or packet)
	logq   float64 // log(1-p)
	n      int
	full   uint64 // sampled flows not held: the table was full
	// maybe has a bit set for each held flow's hash (and others': a
	// Bloom filter of one hash), so a packet of a flow not held rarely
	// reads the table.
	maybe [holdBits / 64]uint64
	slots [holdSize]held
}

func newHoldTable(above float64, window time.Duration, bytes bool, seed uint64) *holdTable {
	p := min(oversampling/max(above, 1), 1)
	return &holdTable{
		seed: seed, bytes: bytes, above: uint64(min(math.Floor(max(above, 0)), math.MaxUint64)),
		smallN: uint32(min(math.Ceil(0.01/p), math.MaxUint32)), p53: uint64(p * (1 << 53)),
		p: p, logq: math.Log1p(-min(p, 0.999999)), size: int64(window),
	}
}

// units is the count a packet of wireLen bytes adds.
func (t *holdTable) units(wireLen uint32) uint32 {
	if t.bytes {
		return wireLen
	}
	return 1
}

// quiet reports that a packet of n units at ts of the flow h leaves the
// table as it is, which is most packets' case: in the table's window, of
// a flow not held, and not sampled. It is small enough to inline into
// the shard's loop, so that such a packet costs a bit test and a draw,
// not calls. (Its bitmap test is add's, bit = h>>40 & (holdBits-1),
// split into word and bit in the fewest operations: the inliner counts
// them.)
func (t *holdTable) quiet(h uint64, ts int64, n uint32) bool {
	return uint64(ts-t.start) < t.span && t.maybe[(h>>46)&(holdBits/64-1)]&(1<<((h>>40)&63)) == 0 &&
		n < t.smallN && t.draw(h, ts) >= uint64(n)*t.p53
}

// draw is a packet's random draw, 53 bits, from its flow hash and time
// rather than a generator, so a replay samples the same packets whatever
// the number of workers.
func (t *holdTable) draw(h uint64, ts int64) uint64 {
	return hashmix.Mix(h^uint64(ts)^t.seed) >> 11
}

// add counts n units of a packet at time ts (ns) of the flow h, and
// returns the flow's count in ts's window before and after (0 when not
// held).
func (t *holdTable) add(h uint64, ts int64, n uint32) (before, after uint64) {
	if uint64(ts-t.start) >= t.span {
		t.roll(ts)
	}
	k := h | 1
	bit := (h >> 40) & (holdBits - 1)
	if t.maybe[bit/64]&(1<<(bit%64)) == 0 {
		// Not held: only the draw.
		if !t.sample(n, h, ts) {
			return 0, 0
		}
		return t.insert(k, bit, n)
	}
	i := k & (holdSize - 1)
	for range holdProbes {
		e := &t.slots[i]
		switch e.h {
		case k:
			before = e.count
			e.count += uint64(n)
			return before, e.count
		case 0:
			if !t.sample(n, h, ts) {
				return 0, 0
			}
			return t.insert(k, bit, n)
		}
		i = (i + 1) & (holdSize - 1)
	}
	if t.sample(n, h, ts) {
		t.full++
	}
	return 0, 0
}

// count counts n units of a packet at ts of the flow h, and returns the
// flow's count after it and whether it went over the rule's threshold.
func (t *holdTable) count(h uint64, ts int64, n uint32) (after uint64, crossed bool) {
	b, a := t.add(h, ts, n)
	return a, b <= t.above && a > t.above
}

// roll moves the table to ts's window, emptied if it is another.
func (t *holdTable) roll(ts int64) {
	w := period.Of(ts, t.size)
	if start := w * t.size; start != t.start || t.span == 0 {
		if t.n > 0 {
			clear(t.slots[:])
			clear(t.maybe[:])
			t.n = 0
		}
		t.start, t.span = start, uint64(t.size)
	}
}

// insert holds the flow h, sampled at a packet of n units.
func (t *holdTable) insert(h, bit uint64, n uint32) (before, after uint64) {
	if t.n >= holdSize*3/4 {
		t.full++
		return 0, 0
	}
	i := h & (holdSize - 1)
	for range holdProbes {
		e := &t.slots[i]
		if e.h == 0 {
			e.h, e.count = h, uint64(n)
			t.n++
			t.maybe[bit/64] |= 1 << (bit % 64)
			return 0, uint64(n)
		}
		i = (i + 1) & (holdSize - 1)
	}
	t.full++
	return 0, 0
}

// sample draws whether a packet of n units is sampled: 1-(1-p)^n, which
// is n·p to within 0.5% while n·p < 0.01 (a 1500-byte packet against a
// threshold of a megabyte or more), and needs no exponential then. It
// agrees with quiet's draw.
func (t *holdTable) sample(n uint32, h uint64, ts int64) bool {
	if n < t.smallN {
		return t.draw(h, ts) < uint64(n)*t.p53
	}
	return float64(t.draw(h, ts)) < -math.Expm1(float64(n)*t.logq)*(1<<53)
}
