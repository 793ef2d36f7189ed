package cms

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchSketches: one that fits in L2 (ε = 0.01, δ = 0.01: 5.4 KB) and one
// that does not (ε = 1e-5, δ = 0.001: 7.6 MB).
var benchSketches = []struct {
	name       string
	eps, delta float64
}{{"eps=0.01/delta=0.01", 0.01, 0.01}, {"eps=1e-5/delta=0.001", 1e-5, 0.001}}

// benchKeys is a stream of 1<<16 keys drawn from 1<<14 (repeats, as
// flows' packets do).
func benchKeys() []uint64 {
	r := rand.New(rand.NewPCG(3, 4))
	keys := make([]uint64, 1<<16)
	for i := range keys {
		keys[i] = r.Uint64N(1<<14) * 0x9e3779b97f4a7c15
	}
	return keys
}

func BenchmarkAdd(b *testing.B) {
	keys := benchKeys()
	for _, c := range benchSketches {
		b.Run(c.name, func(b *testing.B) {
			s := mustNew(b, Options{Epsilon: c.eps, Delta: c.delta})
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				s.Add(keys[i&(len(keys)-1)], 1)
				i++
			}
		})
	}
}

func BenchmarkEstimate(b *testing.B) {
	keys := benchKeys()
	for _, c := range benchSketches {
		b.Run(c.name, func(b *testing.B) {
			s := mustNew(b, Options{Epsilon: c.eps, Delta: c.delta})
			for _, k := range keys {
				s.Add(k, 1)
			}
			b.ReportAllocs()
			i := 0
			var sum uint32
			for b.Loop() {
				sum += s.Estimate(keys[i&(len(keys)-1)])
				i++
			}
			sink = sum
		})
	}
}

var sink uint32

// BenchmarkAddParallel: GOMAXPROCS goroutines adding to one sketch, on
// distinct keys (spread) and on one key (every Add contends).
func BenchmarkAddParallel(b *testing.B) {
	keys := benchKeys()
	for _, c := range benchSketches {
		for _, hot := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/onekey=%t", c.name, hot), func(b *testing.B) {
				s := mustNew(b, Options{Epsilon: c.eps, Delta: c.delta})
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					i := rand.IntN(len(keys))
					for pb.Next() {
						k := keys[i&(len(keys)-1)]
						if hot {
							k = 1
						}
						s.Add(k, 1)
						i++
					}
				})
			})
		}
	}
}
