package ccf

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func mustNew(t testing.TB, o Options) *Filter {
	t.Helper()
	f, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestPackedSlots(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, fc := range [][2]int{{4, 1}, {7, 8}, {13, 19}, {32, 32}, {56, 8}, {60, 4}} {
		sh := newShape(fc[0], fc[1], 4)
		tb := sh.newTable(37, 4)
		n := tb.m * uint64(sh.b)
		ref := make([]uint64, n)
		for range 5000 {
			i := r.Uint64N(n)
			v := r.Uint64() & sh.slotMask
			sh.set(&tb, i, v)
			ref[i] = v
		}
		for i := range n {
			if got := sh.get(&tb, i); got != ref[i] {
				t.Fatalf("f=%d c=%d slot %d: got %x want %x", fc[0], fc[1], i, got, ref[i])
			}
		}
	}
}

func TestAltInvolution(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 10000 {
		m := 1 + r.Uint64N(1<<20)
		i, fp := r.Uint64N(m), 1+r.Uint64N(1<<20)
		j := alt(i, fp, m)
		if j >= m || alt(j, fp, m) != i {
			t.Fatalf("alt(%d,%d,%d)=%d, back %d", i, fp, m, j, alt(j, fp, m))
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		okay bool
	}{
		{Options{Capacity: 1000}, true},
		{Options{Capacity: 1000, FPRate: 0.01, CounterBits: 8}, true},
		{Options{}, false},
		{Options{Capacity: 10, FPRate: 1.5}, false},
		{Options{Capacity: 10, FingerprintBits: 60, CounterBits: 8}, false},
		{Options{Capacity: 10, BucketSize: 17}, false},
		{Options{Capacity: 10, StashSize: -1}, false},
		{Options{Capacity: 10, MaxLevels: 17}, false},
		{Options{Capacity: 1 << 40}, false},
	} {
		err := tc.o.Validate()
		if (err == nil) != tc.okay {
			t.Errorf("%+v: err %v", tc.o, err)
		}
		if err != nil && !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: %v does not wrap ErrInvalidOptions", tc.o, err)
		}
	}
	if f := FingerprintBitsFor(0.001, 4); f != 13 {
		t.Errorf("FingerprintBitsFor(0.001, 4) = %d, want 13", f)
	}
}

// TestAgainstReference checks counts against an exact multiset: never
// under, and with 40-bit fingerprints exact.
func TestAgainstReference(t *testing.T) {
	for _, fb := range []int{8, 40} {
		f := mustNew(t, Options{Capacity: 20000, FingerprintBits: fb, CounterBits: 20, Seed: 7})
		ref := map[uint64]uint64{}
		r := rand.New(rand.NewPCG(5, 6))
		keys := make([]uint64, 19000)
		for i := range keys {
			keys[i] = r.Uint64()
		}
		for range 100000 {
			k := keys[r.IntN(len(keys))]
			n := 1 + r.Uint64N(5)
			if _, err := f.Insert(k, n); err != nil {
				t.Fatal(err)
			}
			ref[k] += n
		}
		// Without deletions a count is never below the truth.
		for _, k := range keys {
			if got, want := f.Count(k), ref[k]; got < want {
				t.Fatalf("f=%d key %x: under-count %d < %d", fb, k, got, want)
			}
		}
		// Remove and delete some, in the reference too. Deleting a key
		// that shares its slot with another removes both: only the long
		// fingerprints are checked exactly after this.
		for i, k := range keys[:3000] {
			if i%2 == 0 {
				f.Delete(k)
				delete(ref, k)
			} else if c := ref[k]; c > 0 {
				f.Remove(k, 1)
				if ref[k] = c - 1; ref[k] == 0 {
					delete(ref, k)
				}
			}
		}
		var over, sum uint64
		for _, k := range keys {
			got, want := f.Count(k), ref[k]
			if fb == 40 && got != want {
				t.Fatalf("f=%d key %x: count %d want %d", fb, k, got, want)
			}
			if got != want {
				over++
			}
			sum += want
		}
		st := f.Stats()
		if fb == 40 && (st.Distinct != uint64(len(ref)) || st.Total != sum) {
			t.Errorf("stats %+v, want distinct %d total %d", st, len(ref), sum)
		}
		t.Logf("f=%d: %d/%d keys over-counted, load %.3f, stashed %d", fb, over, len(keys), st.Load, st.Stashed)
	}
}

// TestFalsePositiveBound measures Count's false-positive rate on absent
// keys against (2b+s)/(2^f-1).
func TestFalsePositiveBound(t *testing.T) {
	for _, fb := range []int{6, 8, 10} {
		f := mustNew(t, Options{Capacity: 50000, FingerprintBits: fb, CounterBits: 8, Seed: 1})
		r := rand.New(rand.NewPCG(uint64(fb), 9))
		for range 50000 {
			if _, err := f.Insert(r.Uint64(), 1); err != nil {
				t.Fatal(err)
			}
		}
		const trials = 200000
		fp := 0
		for range trials {
			if f.Count(r.Uint64()) != 0 {
				fp++
			}
		}
		rate := float64(fp) / trials
		bound := f.FalsePositiveBound()
		// Expected rate ~ load*2b/(2^f-1); the bound omits the load.
		if rate > bound {
			t.Errorf("f=%d: measured %.5f > bound %.5f", fb, rate, bound)
		}
		t.Logf("f=%d: false-positive rate %.5f, bound %.5f, load %.3f", fb, rate, bound, f.Stats().Load)
	}
}

func TestFullNeverEvicts(t *testing.T) {
	f := mustNew(t, Options{Buckets: 64, FingerprintBits: 30, CounterBits: 8, MaxKicks: 50, StashSize: 2, Seed: 3})
	r := rand.New(rand.NewPCG(7, 8))
	var in []uint64
	for {
		k := r.Uint64()
		before, _ := f.MarshalBinary()
		_, err := f.Insert(k, 2)
		if err != nil {
			if !errors.Is(err, ErrFull) {
				t.Fatal(err)
			}
			after, _ := f.MarshalBinary()
			if !bytes.Equal(before, after) {
				t.Fatal("failed insertion changed the filter")
			}
			break
		}
		in = append(in, k)
	}
	for _, k := range in {
		if f.Count(k) != 2 {
			t.Fatalf("resident %x lost: count %d", k, f.Count(k))
		}
	}
	st := f.Stats()
	if st.Stashed != 2 || st.Distinct != uint64(len(in)) {
		t.Errorf("stats %+v after %d insertions", st, len(in))
	}
	t.Logf("full at %d elements, load %.3f", len(in), st.Load)
	// A full filter refuses the packets of every new flow, on the packet
	// path: without allocating.
	full := f.Clone()
	if a := testing.AllocsPerRun(100, func() { full.Insert(r.Uint64(), 1) }); a != 0 {
		t.Errorf("a refused insertion allocates %v times", a)
	}
	// Deleting makes room again: stashed victims move back to buckets.
	for _, k := range in[:20] {
		if !f.Delete(k) {
			t.Fatalf("delete %x failed", k)
		}
	}
	if st := f.Stats(); st.Stashed != 0 {
		t.Errorf("stash not drained after deletes: %d", st.Stashed)
	}
	for _, k := range in[20:] {
		if f.Count(k) != 2 {
			t.Fatalf("resident %x lost after deletes", k)
		}
	}
}

func TestGrowth(t *testing.T) {
	f := mustNew(t, Options{Capacity: 1000, FingerprintBits: 40, CounterBits: 16, MaxLevels: 4})
	ref := map[uint64]uint64{}
	r := rand.New(rand.NewPCG(11, 12))
	for range 5000 {
		k := r.Uint64()
		c, err := f.Insert(k, 3)
		if err != nil || c != 3 {
			t.Fatalf("insert: %d %v", c, err)
		}
		ref[k] = 3
	}
	for k, want := range ref {
		if got, _ := f.Insert(k, 1); got != want+1 {
			t.Fatalf("key %x: %d want %d", k, got, want+1)
		}
	}
	if st := f.Stats(); st.Levels < 3 {
		t.Errorf("levels %d, want >= 3", st.Levels)
	}
	// MaxLevels 1 refuses.
	g := mustNew(t, Options{Capacity: 1000})
	var err error
	for i := uint64(0); err == nil && i < 10000; i++ {
		_, err = g.Insert(i, 1)
	}
	if !errors.Is(err, ErrFull) {
		t.Errorf("fixed filter accepted 10x its capacity: %v", err)
	}
}

func TestSaturation(t *testing.T) {
	f := mustNew(t, Options{Capacity: 100, CounterBits: 4})
	if c, _ := f.Insert(1, 10); c != 10 {
		t.Fatalf("count %d", c)
	}
	if c, _ := f.Insert(1, 10); c != 15 {
		t.Fatalf("count %d, want saturated 15", c)
	}
	if c, sat := f.Lookup(1); c != 15 || !sat {
		t.Fatalf("lookup %d %v", c, sat)
	}
	if c := f.Remove(1, 3); c != 15 {
		t.Fatalf("remove lowered a saturated counter to %d", c)
	}
	if c, _ := f.Insert(2, 100); c != 15 {
		t.Fatalf("new key count %d", c)
	}
	if s := f.Stats().Saturations; s != 2 {
		t.Errorf("saturations %d, want 2", s)
	}
	if f.Remove(3, 1) != 0 || f.Delete(3) {
		t.Error("absent key removed")
	}
}

func TestFalsePositiveBoundFormula(t *testing.T) {
	f := mustNew(t, Options{Capacity: 100, FingerprintBits: 8, StashSize: 4})
	if got, want := f.FalsePositiveBound(), 12.0/255; math.Abs(got-want) > 1e-12 {
		t.Errorf("bound %v want %v", got, want)
	}
}
