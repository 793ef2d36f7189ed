package fcf

import (
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

// TestAgainstExact: with no overflow, a member is never absent and never
// answered with a wrong value (two matching fingerprints give "don't
// know"); deleting everything empties the table.
func TestAgainstExact(t *testing.T) {
	const n = 20000
	f := build(t, n, 0.001)
	r := rand.New(rand.NewPCG(1, 2))
	ref := map[uint64]uint32{}
	for len(ref) < n {
		h, v := r.Uint64(), uint32(r.IntN(276))
		if _, ok := ref[h]; ok {
			continue
		}
		ref[h] = v
		if err := f.Insert(h, v); err != nil {
			t.Fatalf("overflow at load %.2f", float64(len(ref))/float64(f.Cells()))
		}
	}
	for h, v := range ref {
		got, a := f.Query(h)
		if a == Absent || (a == Found && got != v) {
			t.Fatalf("member %x: %d %v, want %d", h, got, a, v)
		}
		if err := f.Update(h, v, (v+1)%276); err != nil {
			t.Fatal(err)
		}
		ref[h] = (v + 1) % 276
	}
	for h, v := range ref {
		if err := f.Delete(h, v); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < f.Cells(); i++ {
		if f.cells.Get(i) != 0 {
			t.Fatalf("cell %d not empty after deleting every key", i)
		}
	}
}

// TestFalsePositiveRate checks non-members against d*h*a/2^f.
func TestFalsePositiveRate(t *testing.T) {
	const n = 20000
	for _, p := range []float64{0.1, 0.01, 0.001} {
		f := build(t, n, p)
		r := rand.New(rand.NewPCG(5, 6))
		for i := 0; i < n; i++ {
			if err := f.Insert(r.Uint64(), uint32(r.IntN(276))); err != nil {
				t.Fatal(err)
			}
		}
		fp := 0
		const q = 200000
		for i := 0; i < q; i++ {
			if _, a := f.Query(r.Uint64()); a != Absent {
				fp++
			}
		}
		load := float64(n) / float64(f.Cells())
		bound := float64(f.d*f.h) * load / float64(uint64(1)<<f.fbits)
		if rate := float64(fp) / q; rate > 1.3*bound+5/float64(q) || bound > p {
			t.Errorf("p=%g: false-positive rate %.5f, bound %.5f", p, rate, bound)
		}
	}
}

func TestEqualMemoryUsesTheBytes(t *testing.T) {
	for _, mem := range []int{1 << 10, 1 << 16, 1 << 20} {
		f, err := New(Options{Capacity: 1000, MemoryBytes: mem, Values: 276})
		if err != nil {
			t.Fatal(err)
		}
		if got := f.MemoryBytes(); got > mem+64 || got < mem*9/10 {
			t.Errorf("memory %d: table takes %d bytes", mem, got)
		}
	}
}

func TestNoAllocs(t *testing.T) {
	f := build(t, 1000, 0.01)
	h := uint64(42)
	if n := testing.AllocsPerRun(200, func() {
		_ = f.Insert(h, 3)
		f.Query(h)
		_ = f.Update(h, 3, 4)
		_ = f.Delete(h, 4)
		_ = f.Delete(h, 4)
	}); n != 0 {
		t.Fatalf("allocs = %v", n)
	}
}

func BenchmarkInsertQueryDelete(b *testing.B) {
	f := build(b, 1<<20, 0.001)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h := uint64(i) * 0x9e3779b97f4a7c15
		_ = f.Insert(h, 7)
		f.Query(h)
		_ = f.Delete(h, 7)
	}
}
