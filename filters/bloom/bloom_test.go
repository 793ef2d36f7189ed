package bloom

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// fpTolerance is the allowed distance between a measured and an analytic
// rate over trials Bernoulli draws: 5 standard deviations plus a small model
// error (the formulas assume perfectly independent hash functions).
func fpTolerance(p float64, trials int) float64 {
	return 5*math.Sqrt(p*(1-p)/float64(trials)) + 0.03*p
}

// measure fills f with n random keys, checks them all (no false negatives,
// against the exact set), then returns the false-positive rate over trials
// keys known to be absent.
func measure(t *testing.T, f *Filter, n, trials int, seed uint64) float64 {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	in := make(map[uint64]struct{}, n)
	for len(in) < n {
		h := r.Uint64()
		in[h] = struct{}{}
		f.Add(h)
	}
	for h := range in {
		if !f.Test(h) {
			t.Fatalf("false negative for %#x", h)
		}
	}
	fp := 0
	for i := 0; i < trials; {
		h := r.Uint64()
		if _, ok := in[h]; ok {
			continue
		}
		i++
		if f.Test(h) {
			fp++
		}
	}
	return float64(fp) / float64(trials)
}

func TestFPRateWithinAnalyticBound(t *testing.T) {
	const trials = 400_000
	for _, tc := range []struct {
		n       uint64
		p       float64
		blocked bool
	}{
		{10_000, 0.01, false},
		{10_000, 0.001, false},
		{50_000, 0.05, false},
		{10_000, 0.01, true},
		{10_000, 0.001, true},
		{50_000, 0.05, true},
	} {
		t.Run(fmt.Sprintf("n=%d/p=%g/blocked=%t", tc.n, tc.p, tc.blocked), func(t *testing.T) {
			f, err := NewWithOptions(Options{Elements: tc.n, FPRate: tc.p, Blocked: tc.blocked})
			if err != nil {
				t.Fatal(err)
			}
			est := f.EstimatedFPRate(tc.n)
			if est > tc.p*1.001 {
				t.Errorf("sized filter m=%d k=%d estimates %g > target %g", f.Bits(), f.Hashes(), est, tc.p)
			}
			got := measure(t, f, int(tc.n), trials, tc.n)
			if d := math.Abs(got - est); d > fpTolerance(est, trials) {
				t.Errorf("measured fp %g, analytic %g (m=%d k=%d): off by %g > %g", got, est, f.Bits(), f.Hashes(), d, fpTolerance(est, trials))
			}
			t.Logf("m=%d k=%d measured %.5f analytic %.5f", f.Bits(), f.Hashes(), got, est)
		})
	}
}

// TestFPRateXXH3Keys uses sequential integers hashed with HashBytes, the
// realistic key stream, instead of random hashes.
func TestFPRateXXH3Keys(t *testing.T) {
	const n, trials = 20_000, 200_000
	f, _ := New(n, 0.01)
	var b [8]byte
	key := func(i int) []byte {
		for j := range b {
			b[j] = byte(i >> (8 * j))
		}
		return b[:]
	}
	for i := 0; i < n; i++ {
		f.AddBytes(key(i))
	}
	fp := 0
	for i := n; i < n+trials; i++ {
		if f.TestBytes(key(i)) {
			fp++
		}
	}
	got, est := float64(fp)/trials, f.EstimatedFPRate(n)
	if math.Abs(got-est) > fpTolerance(est, trials) {
		t.Errorf("measured %g, analytic %g", got, est)
	}
}

// TestBitSpreadChiSquare checks that bit positions are uniform: with k=1 and
// n ≪ m (few collisions), the set bits per 1/64th of the array follow the uniform law.
func TestBitSpreadChiSquare(t *testing.T) {
	for _, blocked := range []bool{false, true} {
		f, _ := NewWithOptions(Options{Bits: 1 << 20, Hashes: 1, Blocked: blocked})
		r := rand.New(rand.NewPCG(7, 7))
		for i := 0; i < 20_000; i++ {
			f.Add(r.Uint64())
		}
		const buckets = 64
		var cnt [buckets]float64
		per := len(f.words) / buckets
		total := 0.0
		for i, w := range f.words {
			c := float64(popcount(w))
			cnt[i/per] += c
			total += c
		}
		chi := 0.0
		exp := total / buckets
		for _, c := range cnt {
			chi += (c - exp) * (c - exp) / exp
		}
		// 63 degrees of freedom: P(chi² > 103.4) = 0.001.
		if chi > 103.4 {
			t.Errorf("blocked=%t: chi-square %.1f over %d buckets", blocked, chi, buckets)
		}
	}
}

func popcount(w uint64) int {
	c := 0
	for ; w != 0; w &= w - 1 {
		c++
	}
	return c
}

// TestPositionsPinned pins the bit positions of fixed hashes: a change of
// the indexing (which would invalidate every stored filter) fails here.
func TestPositionsPinned(t *testing.T) {
	for _, tc := range []struct {
		blocked bool
		want    []uint64
	}{
		{false, pinnedStandard},
		{true, pinnedBlocked},
	} {
		f, _ := NewWithOptions(Options{Bits: 4096, Hashes: 4, Blocked: tc.blocked})
		f.Add(0x0123456789abcdef)
		f.Add(0xfedcba9876543210)
		var got []uint64
		for i, w := range f.words {
			for b := 0; b < 64; b++ {
				if w&(1<<b) != 0 {
					got = append(got, uint64(i*64+b))
				}
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("blocked=%t: positions %v, pinned %v", tc.blocked, got, tc.want)
		}
	}
}

var (
	pinnedStandard = []uint64{1857, 2508, 2860, 3158, 3176, 3493, 3809, 3810}
	pinnedBlocked  = []uint64{2599, 2798, 2821, 3023, 3605, 3984, 3991, 4014}
)

func TestTestAndAddCountReset(t *testing.T) {
	f, _ := New(1000, 0.001)
	if f.TestAndAdd(42) {
		t.Fatal("empty filter reports 42 present")
	}
	if !f.TestAndAdd(42) || !f.Test(42) {
		t.Fatal("42 absent after add")
	}
	if f.Count() != 1 {
		t.Fatalf("count %d after one distinct add", f.Count())
	}
	f.Reset()
	if f.Test(42) || f.Count() != 0 || f.FillRatio() != 0 {
		t.Fatal("reset left state")
	}
}

func TestMerge(t *testing.T) {
	for _, blocked := range []bool{false, true} {
		o := Options{Elements: 5000, FPRate: 0.01, Blocked: blocked}
		a, _ := NewWithOptions(o)
		b, _ := NewWithOptions(o)
		u, _ := NewWithOptions(o)
		r := rand.New(rand.NewPCG(3, 4))
		for i := 0; i < 4000; i++ {
			h := r.Uint64()
			if i%2 == 0 {
				a.Add(h)
			} else {
				b.Add(h)
			}
			u.Add(h)
		}
		if err := a.Merge(b); err != nil {
			t.Fatal(err)
		}
		for i := range u.words {
			if u.words[i] != a.words[i] {
				t.Fatalf("blocked=%t: merge differs from the union at word %d", blocked, i)
			}
		}
	}
	a, _ := New(1000, 0.01)
	for _, o := range []Options{
		{Elements: 2000, FPRate: 0.01},
		{Bits: a.Bits(), Hashes: a.Hashes() + 1},
		{Elements: 1000, FPRate: 0.01, Blocked: true},
	} {
		b, _ := NewWithOptions(o)
		before, _ := a.MarshalBinary()
		err := a.Merge(b)
		if !errors.Is(err, ErrIncompatible) {
			t.Errorf("merge with %+v: %v, want ErrIncompatible", o, err)
		}
		after, _ := a.MarshalBinary()
		if string(before) != string(after) {
			t.Error("failed merge changed the receiver")
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{
		{},
		{Elements: 10},
		{Elements: 10, FPRate: 1},
		{Elements: 10, FPRate: -0.1},
		{Bits: 100},
		{Hashes: 3},
		{Bits: 100, Hashes: 33},
		{Bits: MaxBits + 1, Hashes: 3},
		{Elements: 1 << 62, FPRate: 1e-12},
	} {
		if _, err := NewWithOptions(o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: %v, want ErrInvalidOptions", o, err)
		}
	}
}

func TestNoAllocs(t *testing.T) {
	for _, blocked := range []bool{false, true} {
		f, _ := NewWithOptions(Options{Elements: 1000, FPRate: 0.01, Blocked: blocked})
		h := uint64(1)
		if n := testing.AllocsPerRun(1000, func() {
			h = h*lcgMul + lcgAdd
			f.Add(h)
			f.Test(h + 1)
			f.TestAndAdd(h + 2)
			f.TestBytes([]byte("abc"))
		}); n != 0 {
			t.Errorf("blocked=%t: %v allocs per op", blocked, n)
		}
	}
}

// benchFilter measures op on a filter sized for n elements at rate fp and
// holding n random keys; the keys tested or added are fresh ones.
func benchFilter(b *testing.B, blocked bool, n int, fp float64, op string) {
	f, _ := NewWithOptions(Options{Elements: uint64(n), FPRate: fp, Blocked: blocked})
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < n; i++ {
		f.Add(r.Uint64())
	}
	keys := make([]uint64, 1<<16)
	for i := range keys {
		keys[i] = r.Uint64()
	}
	b.ReportAllocs()
	b.ResetTimer()
	var hits int
	for i := 0; i < b.N; i++ {
		h := keys[i&(len(keys)-1)]
		switch op {
		case "add":
			f.Add(h)
		case "test":
			if f.Test(h) {
				hits++
			}
		case "testandadd":
			if f.TestAndAdd(h ^ uint64(i>>16)) {
				hits++
			}
		}
	}
	_ = hits
}

func BenchmarkAdd(b *testing.B) {
	b.Run("standard/1M", func(b *testing.B) { benchFilter(b, false, 1_000_000, 0.01, "add") })
	b.Run("blocked/1M", func(b *testing.B) { benchFilter(b, true, 1_000_000, 0.01, "add") })
}

func BenchmarkTest(b *testing.B) {
	b.Run("standard/1M", func(b *testing.B) { benchFilter(b, false, 1_000_000, 0.01, "test") })
	b.Run("blocked/1M", func(b *testing.B) { benchFilter(b, true, 1_000_000, 0.01, "test") })
	// The dedup stage's shape: 25k elements at 1e-6 (k = 20), cache resident.
	b.Run("blocked/25k-1e-6", func(b *testing.B) { benchFilter(b, true, 25_000, 1e-6, "test") })
}

// BenchmarkTestAndAdd inserts fresh keys into the dedup stage's shape.
func BenchmarkTestAndAdd(b *testing.B) {
	b.Run("blocked/25k-1e-6", func(b *testing.B) { benchFilter(b, true, 25_000, 1e-6, "testandadd") })
}
