package fbf

import (
	"fmt"
	"math"
	"time"

	"github.com/flowmon/flowmon/filters/bloom"
)

// FBF is an N-Forgetful Bloom Filter. Build one with New or NewWithOptions.
// Not safe for concurrent use, except Stats (see the package doc).
type FBF struct {
	opt     Options
	m       uint64
	k       int
	filters []*bloom.Filter // future, present, past newest .. past oldest
	fut     []uint64        // insertions each filter received as the future filter, parallel to filters
	spare   []*bloom.Filter // filters removed by a scale-down, for reuse
	live    int             // filters[:live] have held elements (the rest were added empty)
	ps      []float64       // scratch for the estimate
	scratch []uint64        // scratch for the projection

	refresh    int64 // t in nanoseconds
	started    bool
	start      int64 // start of the current period (Unix ns)
	next       int64 // start + refresh
	nextTick   int64 // next adaptation / publication point
	inserted   uint64
	refreshes  uint64
	scaleUps   uint64
	scaleDowns uint64

	tickInserted uint64 // inserted at the last adaptation
	tickAt       int64  // time of the last adaptation

	stats published
}

// New returns a basic FBF (N = 1, optimized check) whose constituent
// filters have m bits and k hashes, refreshed every t.
func New(m uint64, k int, t time.Duration) (*FBF, error) {
	return NewWithOptions(Options{Bits: m, Hashes: k, Refresh: t})
}

// NewWithOptions returns an FBF described by o.
func NewWithOptions(o Options) (*FBF, error) {
	m, k, err := o.Shape()
	if err != nil {
		return nil, fmt.Errorf("new fbf: %w", err)
	}
	o = o.withDefaults()
	n := o.Past + 2
	f := &FBF{opt: o, m: m, k: k, refresh: int64(o.Refresh), live: 2}
	for range n {
		f.filters = append(f.filters, f.newFilter())
	}
	f.fut = make([]uint64, n, max(n, o.Adaptive.MaxFilters))
	f.ps = make([]float64, 0, max(n, o.Adaptive.MaxFilters))
	f.scratch = make([]uint64, 0, max(n, o.Adaptive.MaxFilters))
	f.Publish()
	return f, nil
}

func (f *FBF) newFilter() *bloom.Filter {
	if len(f.spare) > 0 {
		b := f.spare[len(f.spare)-1]
		f.spare = f.spare[:len(f.spare)-1]
		b.Reset()
		return b
	}
	b, err := bloom.NewWithOptions(bloom.Options{Bits: f.m, Hashes: f.k, Blocked: f.opt.Blocked})
	if err != nil { // the shape was validated by Options.Shape
		panic(fmt.Sprintf("fbf: validated shape rejected: %v", err))
	}
	return b
}

// advance brings the filter to time now: it cascades the refreshes now has
// crossed and runs the adaptation tick. Times before the current period's
// start are treated as in it (the filter never moves backwards).
func (f *FBF) advance(now time.Time) {
	t := now.UnixNano()
	if !f.started {
		f.started = true
		f.start, f.next = t, t+f.refresh
		f.nextTick = t + int64(f.opt.Adaptive.Interval)
		f.tickAt = t
		return
	}
	if t < f.next && t < f.nextTick {
		return
	}
	f.catchUp(t)
	if t >= f.nextTick {
		if f.opt.Adaptive.TargetFPP > 0 {
			f.adapt(t)
			f.next = f.start + f.refresh
			f.catchUp(t)
		}
		f.nextTick = t + int64(f.opt.Adaptive.Interval)
		f.Publish()
	}
}

// catchUp cascades once per refresh point in (start, t], at most len(filters)
// times: after that every filter is empty whatever the gap.
func (f *FBF) catchUp(t int64) {
	if t < f.next {
		return
	}
	steps := (t-f.next)/f.refresh + 1
	if steps > int64(len(f.filters)) || steps < 0 {
		for i, b := range f.filters {
			b.Reset()
			f.fut[i] = 0
		}
		f.live = min(len(f.filters), f.live+int(min(steps, int64(len(f.filters)))))
		f.refreshes += uint64(len(f.filters))
		f.start = t // everything is forgotten: re-anchor the periods here
		f.next = t + f.refresh
		return
	}
	for range steps {
		f.cascade()
	}
	f.start = f.next + (steps-1)*f.refresh
	f.next = f.start + f.refresh
}

// cascade is one refresh (Section III-C): drop the oldest filter, move the
// others one place older, add an empty future filter (the oldest's memory).
func (f *FBF) cascade() {
	n := len(f.filters)
	oldest := f.filters[n-1]
	copy(f.filters[1:], f.filters[:n-1])
	copy(f.fut[1:], f.fut[:n-1])
	oldest.Reset()
	f.filters[0], f.fut[0] = oldest, 0
	f.live = min(f.live+1, n)
	f.refreshes++
}

// Prefetch starts loading the blocks that TestAndAdd or Test of h will
// read in the live filters, so that a caller holding a batch can start
// those misses a few elements ahead. It changes nothing.
func (f *FBF) Prefetch(h uint64) { bloom.Prefetch(h, f.filters[:f.live]) }

// Test runs the membership check at time now.
func (f *FBF) Test(h uint64, now time.Time) bool {
	f.advance(now)
	var p bloom.Probe
	f.filters[0].SetProbe(&p, h)
	return f.contains(&p)
}

// TestAndAdd is Algorithm 1 at time now: it runs the membership check and,
// if the element is absent, inserts it into the future and present
// filters. It reports whether the element was (possibly) present.
//
// The constituent filters all have one shape, so the element's probe (its
// block and bit mask) is computed once and serves every filter the check
// reads and both insertions.
func (f *FBF) TestAndAdd(h uint64, now time.Time) bool {
	f.advance(now)
	var p bloom.Probe
	f.filters[0].SetProbe(&p, h)
	if f.contains(&p) {
		return true
	}
	f.filters[0].AddProbe(&p)
	f.filters[1].AddProbe(&p)
	f.fut[0]++
	f.inserted++
	return false
}

// Add inserts the element at time now (Algorithm 1).
func (f *FBF) Add(h uint64, now time.Time) { f.TestAndAdd(h, now) }

// TestBytes and TestAndAddBytes hash b with bloom.HashBytes.
func (f *FBF) TestBytes(b []byte, now time.Time) bool { return f.Test(bloom.HashBytes(b), now) }

// TestAndAddBytes is TestAndAdd on bloom.HashBytes(b).
func (f *FBF) TestAndAddBytes(b []byte, now time.Time) bool {
	return f.TestAndAdd(bloom.HashBytes(b), now)
}

// contains is the membership check of the configured mode over the live
// filters, for an element's probe.
func (f *FBF) contains(p *bloom.Probe) bool {
	fs := f.filters[:f.live]
	if f.opt.Check == Simple {
		for _, b := range fs {
			if b.TestProbe(p) {
				return true
			}
		}
		return false
	}
	if fs[0].TestProbe(p) {
		return true
	}
	last := len(fs) - 1
	if f.opt.Check == Optimized {
		// The last pair matches only if the oldest filter does, and that
		// one is checked alone: test it first and skip the pair.
		if last >= 1 && fs[last].TestProbe(p) {
			return true
		}
		last--
	}
	for i := 1; i < last; i++ {
		if fs[i].TestProbe(p) && fs[i+1].TestProbe(p) {
			return true
		}
	}
	return false
}

// Reset forgets everything and restarts the period clock at the next
// operation; the shape, N and t stay as they are.
func (f *FBF) Reset() {
	for i, b := range f.filters {
		b.Reset()
		f.fut[i] = 0
	}
	f.live = 2
	f.started = false
}

// count is the number of insertions filter i holds: those of its own
// future period and, from the present on, those of the period in which it
// was the present filter (the future period of filter i-1).
func count(fut []uint64, i int) uint64 {
	if i == 0 {
		return fut[0]
	}
	return fut[i] + fut[i-1]
}

// EquationFPP is Equation 3 of the paper (or the simple check's product)
// on the current insertion counts: every filter independent.
func (f *FBF) EquationFPP() float64 {
	return f.modelFPP(f.fut[:f.live], Independent)
}

// EstimatedFPP is the false-positive probability of the configured model
// (Options.Model) on the current insertion counts.
func (f *FBF) EstimatedFPP() float64 { return f.modelFPP(f.fut[:f.live], f.opt.Model) }

// modelFPP evaluates model md on the live filters' future-period counts.
func (f *FBF) modelFPP(fut []uint64, md Model) float64 {
	f.ps = f.ps[:0]
	for i := range fut {
		f.ps = append(f.ps, filterFP(f.m, f.k, count(fut, i), f.opt.Blocked))
	}
	if md == Independent || f.opt.Check == Simple {
		return estimate(f.ps, f.opt.Check)
	}
	return correlated(f.m, f.k, fut, f.ps, f.opt.Check)
}

// estimate combines per-filter false-positive rates ps (future first) for
// check c: Equations 2 and 3 of the paper for Optimized.
func estimate(ps []float64, c CheckMode) float64 {
	if len(ps) == 0 {
		return 0
	}
	// Σ log(1 - x) keeps precision for tiny x.
	var s float64
	if c == Simple {
		for _, p := range ps {
			s += math.Log1p(-p)
		}
		return -math.Expm1(s)
	}
	s = math.Log1p(-ps[0])
	last := len(ps) - 1
	for i := 1; i < last; i++ {
		s += math.Log1p(-ps[i] * ps[i+1])
	}
	if c == Optimized && last >= 1 {
		s += math.Log1p(-ps[last])
	}
	return -math.Expm1(s)
}

// correlated is the optimized (or pairs-only) check's rate when the pair
// (i, i+1), i ≥ 1, shares the fut[i] elements of one period: with the same
// hash functions and m, those elements set the same bits in both filters,
// so a bit is set in both with probability q_s + (1 - q_s)·q_a·q_b (q_x the
// probability that x elements set a given bit), and the pair errs with that
// to the power k instead of p_i·p_{i+1}. ps holds the filters' own rates.
// The future filter's false positives are the present's too; the formula
// keeps the future's term, which makes it a slight overestimate.
func correlated(m uint64, k int, fut []uint64, ps []float64, c CheckMode) float64 {
	if len(ps) == 0 {
		return 0
	}
	q := func(x uint64) float64 {
		return -math.Expm1(float64(k) * float64(x) * math.Log1p(-1/float64(m)))
	}
	s := math.Log1p(-ps[0])
	last := len(ps) - 1
	pairs := last
	if c == Optimized {
		// The last pair errs only if the oldest filter does, which the
		// oldest-alone term already counts.
		pairs = last - 1
	}
	for i := 1; i < pairs; i++ {
		own := fut[i-1] // the period filter i spent as the present
		older := fut[i+1]
		both := q(fut[i]) + (1-q(fut[i]))*q(own)*q(older)
		s += math.Log1p(-math.Pow(both, float64(k)))
	}
	if c == Optimized && last >= 1 {
		s += math.Log1p(-ps[last])
	}
	return -math.Expm1(s)
}

// Filters is N+2, the number of constituent filters.
func (f *FBF) Filters() int { return len(f.filters) }

// Past is N.
func (f *FBF) Past() int { return len(f.filters) - 2 }

// Refresh is the current refresh period t.
func (f *FBF) Refresh() time.Duration { return time.Duration(f.refresh) }

// Window is the guaranteed memory (N+1)·t of the optimized check (N·t for
// PairsOnly): an element is remembered at least this long.
func (f *FBF) Window() time.Duration {
	return time.Duration(f.windowPeriods(len(f.filters)) * f.refresh)
}

// Shape returns the constituent filters' m and k.
func (f *FBF) Shape() (m uint64, k int) { return f.m, f.k }

// Counts appends the insertion count of each filter, future first.
func (f *FBF) Counts(dst []uint64) []uint64 {
	for i := range f.filters {
		dst = append(dst, count(f.fut, i))
	}
	return dst
}

// MemoryBytes is the memory of the constituent filters (spares included).
func (f *FBF) MemoryBytes() uint64 {
	var s uint64
	for _, b := range f.filters {
		s += b.MemoryBytes()
	}
	for _, b := range f.spare {
		s += b.MemoryBytes()
	}
	return s
}
