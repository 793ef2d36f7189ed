package qf

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestLookupAllocatesNothing(t *testing.T) {
	f := mustShape(t, 12, 10)
	fill(t, f, 3000, 1)
	h := uint64(0)
	if a := testing.AllocsPerRun(1000, func() {
		h++
		f.Contains(h)
		f.Count(h)
	}); a != 0 {
		t.Fatalf("Contains and Count allocate %.1f times", a)
	}
	if a := testing.AllocsPerRun(1000, func() {
		h++
		f.Insert(h)
		f.Delete(h)
	}); a != 0 {
		t.Fatalf("Insert and Delete allocate %.1f times", a)
	}
}

func benchFilter(b *testing.B, load float64) (*Filter, []uint64) {
	f, err := New(Options{QuotientBits: 20, RemainderBits: 9})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	keys := make([]uint64, int(load*float64(f.Slots())))
	for i := range keys {
		keys[i] = rng.Uint64()
		if err := f.Insert(keys[i]); err != nil {
			b.Fatal(err)
		}
	}
	return f, keys
}

func BenchmarkContains(b *testing.B) {
	for _, load := range []float64{0.5, 0.75, 0.9} {
		b.Run(loadName(load), func(b *testing.B) {
			f, keys := benchFilter(b, load)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				f.Contains(keys[i&(len(keys)-1)] ^ 1) // mostly absent
				i++
			}
		})
	}
}

func BenchmarkInsertDelete(b *testing.B) {
	for _, load := range []float64{0.5, 0.75, 0.9} {
		b.Run(loadName(load), func(b *testing.B) {
			f, _ := benchFilter(b, load)
			b.ReportAllocs()
			h := uint64(1 << 40)
			for b.Loop() {
				h++
				f.Insert(h)
				f.Delete(h)
			}
		})
	}
}

func BenchmarkMerge(b *testing.B) {
	f, _ := benchFilter(b, 0.375)
	g, _ := benchFilter(b, 0.375)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Merge(f, g); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(f.Len()+g.Len())*float64(b.N)/b.Elapsed().Seconds(), "fp/s")
}

func loadName(l float64) string { return fmt.Sprintf("load=%.2f", l) }
