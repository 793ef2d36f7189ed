package fbf

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/flowmon/flowmon/internal/testutil/testgate"
)

// benchFBF builds (lazily, inside the sub-benchmark, so 10M is built only
// when selected) an FBF holding size elements in its window: N = 1, size/2
// insertions per period over two periods, 1% target. It then measures
// TestAndAdd (Algorithm 1: the check, plus the insertion of the absent) of
// fresh elements at a fixed time inside the period.
func benchFBF(b *testing.B, size int, blocked bool) {
	testgate.LongSize(b, uint64(size))
	const period = time.Second
	f, err := NewWithOptions(Options{ElementsPerPeriod: uint64(size / 2), FPRate: 0.01, Refresh: period, Blocked: blocked})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	for i := range size {
		f.Add(r.Uint64(), t0.Add(2*period*time.Duration(i)/time.Duration(size)))
	}
	now := t0.Add(2*period - time.Millisecond)
	keys := make([]uint64, 1<<16)
	for i := range keys {
		keys[i] = r.Uint64()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.TestAndAdd(keys[i&(len(keys)-1)]^uint64(i>>16), now)
	}
}

func BenchmarkTestAndAdd(b *testing.B) {
	for _, size := range []int{1_000_000, 10_000_000} {
		for _, blocked := range []bool{false, true} {
			layout := "standard"
			if blocked {
				layout = "blocked"
			}
			b.Run(fmt.Sprintf("%dM/%s", size/1_000_000, layout), func(b *testing.B) { benchFBF(b, size, blocked) })
		}
	}
}

func BenchmarkEstimatedFPP(b *testing.B) {
	f, _ := NewWithOptions(Options{Bits: 6250, Hashes: 5, Past: 6, Refresh: time.Second})
	for i := range 1000 {
		f.Add(uint64(i)*0x9e3779b97f4a7c15, t0.Add(time.Duration(i)*10*time.Millisecond))
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		f.EstimatedFPP()
	}
}

// BenchmarkSteady is TestAndAdd of fresh elements at the load the FBF is
// sized for, with time moving on: the dedup stage's default shape (25k
// elements per 25 ms period at 1e-6, N = 1, so k = 20), one element per
// microsecond on average. The filters stay at their design fill (a fixed time would
// saturate them, and then every element is found present and none is
// inserted).
func BenchmarkSteady(b *testing.B) {
	for _, blocked := range []bool{true, false} {
		layout := "standard"
		if blocked {
			layout = "blocked"
		}
		b.Run("25k-1e-6/"+layout, func(b *testing.B) {
			f, err := NewWithOptions(Options{ElementsPerPeriod: 25_000, FPRate: 1e-6, Refresh: 25 * time.Millisecond, Blocked: blocked})
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(2, 2))
			keys := make([]uint64, 1<<16)
			for i := range keys {
				keys[i] = r.Uint64()
			}
			var found int
			now := t0
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i&15 == 0 { // in bursts of 16, without a time.Add per element
					now = t0.Add(time.Duration(i) * time.Microsecond)
				}
				if f.TestAndAdd(keys[i&(len(keys)-1)]^uint64(i>>16)*0x9e3779b97f4a7c15, now) {
					found++
				}
			}
			b.ReportMetric(float64(found)/float64(b.N), "found/op")
		})
	}
}
