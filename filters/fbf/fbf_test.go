package fbf

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestWindowExactReference replays a stream against an exact reference:
// an element inserted in period p must be found in every period q with
// q-p ≤ N+1 (N for PairsOnly) and, the filters being large enough for false
// positives to be negligible, must be forgotten afterwards. Insertion
// follows Algorithm 1: an element found present is not inserted again, so
// its age counts from its first insertion.
func TestWindowExactReference(t *testing.T) {
	const period = time.Second
	for _, mode := range []CheckMode{Optimized, Simple, PairsOnly} {
		for _, past := range []int{1, 2, 5} {
			t.Run(fmt.Sprintf("%s/N=%d", mode, past), func(t *testing.T) {
				f, err := NewWithOptions(Options{Bits: 1 << 20, Hashes: 8, Past: past, Refresh: period, Check: mode})
				if err != nil {
					t.Fatal(err)
				}
				keep := int64(past + 1)
				if mode == PairsOnly {
					keep = int64(past)
				}
				r := rand.New(rand.NewPCG(uint64(past), uint64(mode)))
				ref := map[uint64]int64{} // element -> period of insertion
				var all []uint64
				for step := 0; step < 400; step++ {
					now := t0.Add(time.Duration(step) * 97 * time.Millisecond)
					q := int64(now.Sub(t0) / period)
					for range 5 {
						var h uint64
						if len(all) > 0 && r.IntN(2) == 0 {
							h = all[r.IntN(len(all))]
						} else {
							h = r.Uint64()
							all = append(all, h)
						}
						p, seen := ref[h]
						want := seen && q-p <= keep
						got := f.TestAndAdd(h, now)
						if got != want {
							t.Fatalf("step %d: element inserted in period %d, now period %d: present=%t, want %t", step, p, q, got, want)
						}
						if !got {
							ref[h] = q
						}
					}
				}
				if f.Window() != time.Duration(keep)*period {
					t.Errorf("window %v, want %v", f.Window(), time.Duration(keep)*period)
				}
			})
		}
	}
}

func TestGapCascadesBounded(t *testing.T) {
	const period = time.Second
	for _, gap := range []int{0, 1, 2, 3, 4, 10, 1 << 30} {
		f, _ := NewWithOptions(Options{Bits: 1 << 16, Hashes: 6, Past: 2, Refresh: period})
		f.Add(1, t0)
		f.Add(2, t0.Add(period/2))
		now := t0.Add(time.Duration(gap)*period + period/2)
		got := f.Test(1, now)
		want := gap <= 3 // N+1 = 3 periods
		if got != want {
			t.Errorf("gap of %d periods: present=%t, want %t", gap, got, want)
		}
		if f.refreshes > uint64(f.Filters()) {
			t.Errorf("gap of %d periods: %d cascades, more than %d filters", gap, f.refreshes, f.Filters())
		}
		// Later operations keep the period grid (or the new anchor).
		f.Add(3, now)
		if !f.Test(3, now.Add(3*period)) || f.Test(3, now.Add(4*period)) {
			t.Errorf("gap of %d periods: the filter lost its period grid", gap)
		}
	}
}

func TestTimeBackwards(t *testing.T) {
	f, _ := New(1<<12, 4, time.Second)
	f.Add(7, t0.Add(10*time.Second))
	if !f.Test(7, t0) || !f.TestAndAdd(7, t0.Add(-time.Hour)) {
		t.Fatal("an earlier time made the filter forget")
	}
}

// fill inserts n fresh elements evenly over periods periods and returns
// the time just before the next refresh.
func fill(f *FBF, r *rand.Rand, n, periods int, period time.Duration) time.Time {
	span := time.Duration(periods) * period
	for i := range n {
		f.Add(r.Uint64()|1, t0.Add(span*time.Duration(i)/time.Duration(n)))
	}
	return t0.Add(span - time.Nanosecond)
}

// probe returns the fraction of trials absent elements (even hashes, while
// fill inserts odd ones) that the filter reports present.
func probe(f *FBF, r *rand.Rand, trials int, now time.Time) float64 {
	fp := 0
	for range trials {
		if f.Test(r.Uint64()&^1, now) {
			fp++
		}
	}
	return float64(fp) / float64(trials)
}

// TestFPPWithinEstimate compares the measured rate with Equation 3 on a
// basic FBF (m = 6250, k = 5, t = 5 s). Equation 3 assumes independent
// filters. For the optimized check of a basic FBF it is then nearly exact:
// the pair (present, past) errs only when the past filter alone errs, and
// the future and past filters hold disjoint periods. The simple check's
// filters share elements (the future's are in the present, the present and
// past share a period), so the truth lies between the largest single
// filter's rate and the estimate.
func TestFPPWithinEstimate(t *testing.T) {
	const trials = 200_000
	for _, mode := range []CheckMode{Optimized, Simple} {
		for _, n := range []int{300, 600, 1200} {
			f, _ := NewWithOptions(Options{Bits: 6250, Hashes: 5, Refresh: 5 * time.Second, Check: mode})
			r := rand.New(rand.NewPCG(uint64(n), 1))
			now := fill(f, r, n, 3, 5*time.Second)
			got := probe(f, r, trials, now)
			est := f.EstimatedFPP()
			var lo float64
			hi := est
			if mode == Simple {
				lo = 0
				for _, p := range f.ps {
					lo = max(lo, p)
				}
			} else {
				// Independence still overcounts the future/present overlap a little.
				lo = est * 0.95
			}
			tol := 5 * math.Sqrt(hi*(1-hi)/trials)
			if got < lo-tol || got > hi+tol {
				t.Errorf("%s, %d elements: measured %.3g outside [%.3g, %.3g] ± %.2g", mode, n, got, lo, hi, tol)
			}
			t.Logf("%s n=%d measured %.3g estimate %.3g (lower %.3g)", mode, n, got, hi, lo)
		}
	}
}

// TestSizeFor checks that a sized FBF meets its target in the steady state
// (sizing uses the correlated model; Equation 3 would undersize N > 1).
func TestSizeFor(t *testing.T) {
	const trials = 200_000
	for _, past := range []int{1, 3} {
		o := Options{ElementsPerPeriod: 2000, FPRate: 0.01, Past: past, Refresh: time.Second}
		f, err := NewWithOptions(o)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(5, uint64(past)))
		now := fill(f, r, 2000*(past+3), past+3, time.Second)
		est := f.EstimatedFPP()
		if est > o.FPRate*1.01 {
			t.Errorf("N=%d: steady-state estimate %g above target %g", past, est, o.FPRate)
		}
		got := probe(f, r, trials, now)
		if got > o.FPRate+5*math.Sqrt(o.FPRate/trials) {
			t.Errorf("N=%d: measured %g above target %g", past, got, o.FPRate)
		}
		m, k := f.Shape()
		t.Logf("N=%d m=%d k=%d estimate %.4g measured %.4g", past, m, k, est, got)
	}
}

func TestOptionsValidate(t *testing.T) {
	ok := Options{Bits: 1000, Hashes: 3, Refresh: time.Second}
	bad := []func(o *Options){
		func(o *Options) { o.Refresh = 0 },
		func(o *Options) { o.Past = -1 },
		func(o *Options) { o.Past = 5000 },
		func(o *Options) { o.Check = 9 },
		func(o *Options) { o.Hashes = 0 },
		func(o *Options) { o.Bits, o.Hashes = 0, 0 },
		func(o *Options) { o.Bits, o.Hashes, o.ElementsPerPeriod, o.FPRate = 0, 0, 10, 2 },
		func(o *Options) { o.Adaptive.TargetFPP = 1.5 },
		func(o *Options) { o.Adaptive = Adaptive{TargetFPP: 0.1, MaxFilters: 2} },
		func(o *Options) { o.Adaptive = Adaptive{TargetFPP: 0.1, MinRefresh: 2, MaxRefresh: 1} },
		func(o *Options) { o.Adaptive = Adaptive{TargetFPP: 0.1, Interval: -1} },
	}
	if _, err := NewWithOptions(ok); err != nil {
		t.Fatal(err)
	}
	for i, mut := range bad {
		o := ok
		mut(&o)
		if _, err := NewWithOptions(o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("case %d %+v: %v, want ErrInvalidOptions", i, o, err)
		}
	}
}

func TestStatsPublished(t *testing.T) {
	f, _ := NewWithOptions(Options{Bits: 1 << 12, Hashes: 4, Refresh: time.Second, Adaptive: Adaptive{Interval: time.Second}})
	for i := range 100 {
		f.Add(uint64(i), t0.Add(time.Duration(i)*30*time.Millisecond))
	}
	s := f.Stats()
	if s.Inserted == 0 || s.Refreshes == 0 || s.Filters != 3 || s.MemoryBytes != f.MemoryBytes() {
		t.Fatalf("stats not published at the tick: %+v", s)
	}
	f.Publish()
	if s := f.Stats(); s.Inserted != 100 || s.EstimatedFPP != f.EstimatedFPP() {
		t.Fatalf("stats after Publish: %+v", s)
	}
}

func TestNoAllocs(t *testing.T) {
	f, _ := NewWithOptions(Options{ElementsPerPeriod: 1000, FPRate: 0.01, Past: 3, Refresh: time.Millisecond})
	now, h := t0, uint64(0)
	if n := testing.AllocsPerRun(10_000, func() {
		now = now.Add(7 * time.Microsecond) // crosses refreshes and ticks
		h += 0x9e3779b97f4a7c15
		f.TestAndAdd(h, now)
		f.Test(h+1, now)
	}); n != 0 {
		t.Errorf("%v allocs per op", n)
	}
}

// TestStatsConcurrent reads Stats while the owner inserts (run with -race).
func TestStatsConcurrent(t *testing.T) {
	f, _ := NewWithOptions(Options{Bits: 1 << 12, Hashes: 4, Refresh: time.Millisecond, Adaptive: Adaptive{Interval: time.Millisecond}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 20_000 {
			f.Add(uint64(i), t0.Add(time.Duration(i)*time.Microsecond))
		}
	}()
	for {
		select {
		case <-done:
			return
		default:
			_ = f.Stats()
		}
	}
}

// TestCorrelatedModelN3 checks the correlated model where Equation 3 fails:
// N = 3, neighbouring past filters sharing a period. The model is an upper
// bound up to noise (it ignores that neighbouring pair events overlap) and
// within 15% of the truth at these loads.
func TestCorrelatedModelN3(t *testing.T) {
	const trials = 200_000
	for _, n := range []int{1000, 1500, 2000} {
		f, _ := NewWithOptions(Options{Bits: 6250, Hashes: 5, Past: 3, Refresh: 5 * time.Second})
		r := rand.New(rand.NewPCG(uint64(n), 3))
		now := fill(f, r, n, 5, 5*time.Second)
		got, est, eq := probe(f, r, trials, now), f.EstimatedFPP(), f.EquationFPP()
		tol := 5 * math.Sqrt(est*(1-est)/trials)
		if got > est+tol || got < 0.85*est-tol {
			t.Errorf("%d elements: measured %.4g, correlated model %.4g (Equation 3 %.4g)", n, got, est, eq)
		}
		t.Logf("%d elements: measured %.4g correlated %.4g Eq. 3 %.4g", n, got, est, eq)
	}
}
