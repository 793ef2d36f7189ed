package fbf

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// refContains is the membership check without the shared probe: every
// filter hashes the element itself.
func (f *FBF) refContains(h uint64) bool {
	fs := f.filters[:f.live]
	if f.opt.Check == Simple {
		for _, b := range fs {
			if b.Test(h) {
				return true
			}
		}
		return false
	}
	if fs[0].Test(h) {
		return true
	}
	last := len(fs) - 1
	if f.opt.Check == Optimized {
		if last >= 1 && fs[last].Test(h) {
			return true
		}
		last--
	}
	for i := 1; i < last; i++ {
		if fs[i].Test(h) && fs[i+1].Test(h) {
			return true
		}
	}
	return false
}

// refTest is Test with per-filter hashing.
func (f *FBF) refTest(h uint64, now time.Time) bool {
	f.advance(now)
	return f.refContains(h)
}

// refTestAndAdd is TestAndAdd with per-filter hashing.
func (f *FBF) refTestAndAdd(h uint64, now time.Time) bool {
	f.advance(now)
	if f.refContains(h) {
		return true
	}
	f.filters[0].Add(h)
	f.filters[1].Add(h)
	f.fut[0]++
	f.inserted++
	return false
}

// TestSharedProbeMatchesPerFilter drives two FBFs with the same stream,
// one through TestAndAdd and Test (one probe shared by all filters), the
// other through per-filter Test and Add calls: every answer and, at the
// end, every constituent filter (bits and count) must be identical. Small,
// heavily loaded filters make both answers frequent; the adaptive case
// adds and removes filters on the way.
func TestSharedProbeMatchesPerFilter(t *testing.T) {
	const period = 10 * time.Millisecond
	for _, blocked := range []bool{true, false} {
		for _, mode := range []CheckMode{Optimized, Simple, PairsOnly} {
			for _, past := range []int{1, 3} {
				for _, adaptive := range []bool{false, true} {
					name := fmt.Sprintf("blocked=%t/%s/N=%d/adaptive=%t", blocked, mode, past, adaptive)
					t.Run(name, func(t *testing.T) {
						o := Options{Bits: 32 * 512, Hashes: 20, Past: past, Refresh: period, Check: mode, Blocked: blocked}
						if adaptive {
							o.Adaptive = Adaptive{TargetFPP: 0.01, Interval: period, MaxFilters: 8}
						}
						got, err := NewWithOptions(o)
						if err != nil {
							t.Fatal(err)
						}
						want, _ := NewWithOptions(o)
						r := rand.New(rand.NewPCG(uint64(past), uint64(mode)))
						var recent []uint64
						var yes, no int
						for i := range 20_000 {
							now := t0.Add(time.Duration(i) * 5 * time.Microsecond)
							h := r.Uint64()
							if len(recent) > 0 && r.IntN(4) == 0 {
								h = recent[r.IntN(len(recent))]
							} else if len(recent) < 1000 {
								recent = append(recent, h)
							} else {
								recent[r.IntN(len(recent))] = h
							}
							q := r.Uint64()
							if g, w := got.Test(q, now), want.refTest(q, now); g != w {
								t.Fatalf("op %d: Test = %t, per filter %t", i, g, w)
							}
							w := want.refTestAndAdd(h, now)
							if g := got.TestAndAdd(h, now); g != w {
								t.Fatalf("op %d: TestAndAdd = %t, per filter %t", i, g, w)
							}
							if w {
								yes++
							} else {
								no++
							}
						}
						if len(got.filters) != len(want.filters) || got.live != len(want.filters[:want.live]) {
							t.Fatalf("%d filters (%d live), per filter %d (%d live)", len(got.filters), got.live, len(want.filters), want.live)
						}
						for i := range got.filters {
							if !got.filters[i].Equal(want.filters[i]) {
								t.Fatalf("filter %d differs", i)
							}
						}
						if yes == 0 || no == 0 {
							t.Fatalf("%d present, %d absent: want both", yes, no)
						}
					})
				}
			}
		}
	}
}

// TestPrefetchChangesNothing: two filters fed the same elements, one with
// a Prefetch before each operation, answer alike and end with the same
// bits; Prefetch allocates nothing. Both layouts (a standard filter's
// Prefetch does nothing).
func TestPrefetchChangesNothing(t *testing.T) {
	for _, blocked := range []bool{false, true} {
		o := Options{ElementsPerPeriod: 2000, FPRate: 1e-3, Refresh: time.Millisecond, Blocked: blocked}
		a, err := NewWithOptions(o)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := NewWithOptions(o)
		r := rand.New(rand.NewPCG(4, 4))
		t0 := time.Unix(1700000000, 0)
		for i := range 20_000 {
			h := r.Uint64() % 30_000 // repeats: some answers are true
			now := t0.Add(time.Duration(i) * time.Microsecond)
			b.Prefetch(h)
			if x, y := a.TestAndAdd(h, now), b.TestAndAdd(h, now); x != y {
				t.Fatalf("blocked=%v: element %d: %v without Prefetch, %v with", blocked, i, x, y)
			}
		}
		for i := range a.filters {
			if !a.filters[i].Equal(b.filters[i]) {
				t.Errorf("blocked=%v: filter %d differs after the same elements", blocked, i)
			}
		}
		if n := testing.AllocsPerRun(100, func() { b.Prefetch(r.Uint64()) }); n != 0 {
			t.Errorf("blocked=%v: Prefetch allocates %v times", blocked, n)
		}
	}
}
