package hll

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

var sink float64

func BenchmarkHLLAdd(b *testing.B) {
	h := mustHLL(b, 14)
	b.ReportAllocs()
	var x uint64
	for b.Loop() {
		x += 0x9e3779b97f4a7c15
		h.Add(x)
	}
}

func BenchmarkHLLEstimate(b *testing.B) {
	for _, p := range []int{6, 10, 14} {
		b.Run(fmt.Sprintf("p=%d", p), func(b *testing.B) {
			h := mustHLL(b, p)
			for i := range uint64(10 << p) {
				h.Add(i)
			}
			b.ReportAllocs()
			for b.Loop() {
				sink += h.Estimate()
			}
		})
	}
}

// spreadShapes: the package doc's example (keys 100k, 13%: 25.6 MB) and
// a small one that stays in cache (1000 keys: 256 KB).
var spreadShapes = []struct {
	name string
	keys int
}{{"keys=1k", 1000}, {"keys=100k", 100_000}}

// pairs is a stream of (key, item) pairs: keys from 1<<14, items from
// 1<<10 (a source's ports repeat).
func pairs() [][2]uint64 {
	r := rand.New(rand.NewPCG(3, 4))
	ps := make([][2]uint64, 1<<16)
	for i := range ps {
		ps[i] = [2]uint64{r.Uint64N(1 << 14), r.Uint64N(1 << 10)}
	}
	return ps
}

func BenchmarkSpreadAdd(b *testing.B) {
	ps := pairs()
	for _, sh := range spreadShapes {
		b.Run(sh.name, func(b *testing.B) {
			s, err := NewSpreadFor(0.13, sh.keys, 0.02)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				p := ps[i&(len(ps)-1)]
				s.Add(p[0], p[1])
				i++
			}
		})
	}
}

func BenchmarkSpreadAddParallel(b *testing.B) {
	ps := pairs()
	for _, sh := range spreadShapes {
		b.Run(sh.name, func(b *testing.B) {
			s, err := NewSpreadFor(0.13, sh.keys, 0.02)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := rand.IntN(len(ps))
				for pb.Next() {
					p := ps[i&(len(ps)-1)]
					s.Add(p[0], p[1])
					i++
				}
			})
		})
	}
}

func BenchmarkSpreadEstimate(b *testing.B) {
	ps := pairs()
	for _, sh := range spreadShapes {
		b.Run(sh.name, func(b *testing.B) {
			s, err := NewSpreadFor(0.13, sh.keys, 0.02)
			if err != nil {
				b.Fatal(err)
			}
			for _, p := range ps {
				s.Add(p[0], p[1])
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				sink += s.Estimate(ps[i&(len(ps)-1)][0])
				i++
			}
		})
	}
}

// BenchmarkRulesShape is a distinct-count rule's update in the rules'
// shape (4096 cells, 2 rows, a threshold of 100 at 0.13), under a flood of
// new keys with one item each: the HLL grid (512 KiB) against the bitmap
// grid (64 KiB) that rules use for such a threshold.
func BenchmarkRulesShape(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 5))
	keys := make([]uint64, 1<<16)
	for i := range keys {
		keys[i] = r.Uint64()
	}
	const item = 80
	b.Run("spread", func(b *testing.B) {
		s, err := NewSpread(4096, 2, PrecisionFor(0.13))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if s.Add(keys[i&(len(keys)-1)]^uint64(i>>16), item) {
				s.MayExceed(keys[i&(len(keys)-1)]^uint64(i>>16), 100)
			}
			i++
		}
	})
	b.Run("bits", func(b *testing.B) {
		s, err := NewBitSpread(4096, 2, CellBitsFor(100, 0.13), 0)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s.Add(keys[i&(len(keys)-1)]^uint64(i>>16), item)
			i++
		}
	})
}
