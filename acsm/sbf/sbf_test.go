package sbf

import (
	"github.com/flowmon/flowmon/acsm/backend"
	"math"
	"math/rand/v2"
	"testing"
)

func build(t testing.TB, n int, p float64) *Filter {
	f, err := New(Options{Capacity: n, FPRate: p, Values: 276, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestAgainstExact: a member is never absent and never answered with a
// wrong value (only "don't know"); after deleting everything the filter is
// empty again.
func TestAgainstExact(t *testing.T) {
	const n = 20000
	f := build(t, n, 0.01)
	r := rand.New(rand.NewPCG(1, 2))
	ref := map[uint64]uint32{}
	for len(ref) < n {
		h, v := r.Uint64(), uint32(r.IntN(276))
		if _, ok := ref[h]; ok {
			continue
		}
		ref[h] = v
		f.Insert(h, v)
	}
	dk := 0
	for h, v := range ref {
		got, a := f.Query(h)
		switch {
		case a == backend.Absent:
			t.Fatalf("member %x absent", h)
		case a == backend.Found && got != v:
			t.Fatalf("member %x: value %d, want %d", h, got, v)
		case a == backend.Unknown:
			dk++
		}
	}
	// A member's answer is "don't know" when every one of its k cells is
	// shared with a key of another value: at most (1-e^{-kn/m})^k.
	bound := math.Pow(1-math.Exp(-float64(f.k*n)/float64(f.m)), float64(f.k))
	if rate := float64(dk) / n; rate > 3*bound+0.001 {
		t.Errorf("don't-know rate %.4f above 3x the bound %.4f", rate, bound)
	}
	for h, v := range ref {
		if err := f.Delete(h, v); err != nil {
			t.Fatal(err)
		}
	}
	for h := range ref {
		if _, a := f.Query(h); a != backend.Absent {
			t.Fatalf("deleted key %x still present", h)
		}
	}
}

// TestFalsePositiveRate checks non-members against the Bloom bound.
func TestFalsePositiveRate(t *testing.T) {
	const n = 20000
	for _, p := range []float64{0.1, 0.01, 0.001} {
		f := build(t, n, p)
		r := rand.New(rand.NewPCG(5, 6))
		for i := 0; i < n; i++ {
			f.Insert(r.Uint64(), uint32(r.IntN(276)))
		}
		fp := 0
		const q = 200000
		for i := 0; i < q; i++ {
			if _, a := f.Query(r.Uint64()); a != backend.Absent {
				fp++
			}
		}
		bound := math.Pow(1-math.Exp(-float64(f.k*n)/float64(f.m)), float64(f.k))
		if rate := float64(fp) / q; rate > 1.3*bound+5/float64(q) {
			t.Errorf("p=%g: false-positive rate %.5f above the bound %.5f", p, rate, bound)
		}
	}
}

// TestUpdateLosesSharedCells shows the sBF's update rule: a cell shared
// with another key becomes "don't know" and stays so after that key
// leaves.
func TestUpdateLosesSharedCells(t *testing.T) {
	f, _ := New(Options{Capacity: 1, MemoryBytes: 4, Values: 4})
	f.k, f.m = 1, 1 // one cell for every key
	f.Insert(1, 2)
	f.Insert(2, 2) // one cell, shared
	if err := f.Update(1, 2, 3); err != nil {
		t.Fatal(err)
	}
	if _, a := f.Query(1); a != backend.Unknown {
		t.Fatalf("shared cell after update: %v, want don't know", a)
	}
	if err := f.Delete(2, 2); err != nil {
		t.Fatal(err)
	}
	if _, a := f.Query(1); a != backend.Unknown {
		t.Fatalf("after the other key left: %v, want still don't know", a)
	}
}

func TestValidate(t *testing.T) {
	for _, o := range []Options{{}, {Capacity: 1, FPRate: 2, Values: 3}, {Capacity: 1, FPRate: 0.1}, {Capacity: 1, FPRate: 0.1, Values: 3, CounterBits: 9}} {
		if _, err := New(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

func TestNoAllocs(t *testing.T) {
	f := build(t, 1000, 0.01)
	h := uint64(42)
	if n := testing.AllocsPerRun(200, func() {
		f.Insert(h, 3)
		f.Query(h)
		_ = f.Update(h, 3, 4)
		_ = f.Delete(h, 4)
		_ = f.Delete(h, 4) // absent: the error path allocates nothing either
	}); n != 0 {
		t.Fatalf("allocs = %v", n)
	}
}

func BenchmarkInsertQueryDelete(b *testing.B) {
	f := build(b, 1<<20, 0.001)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h := uint64(i) * 0x9e3779b97f4a7c15
		f.Insert(h, 7)
		f.Query(h)
		_ = f.Delete(h, 7)
	}
}
