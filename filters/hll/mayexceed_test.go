package hll

import (
	"testing"

	"github.com/flowmon/flowmon/internal/hashmix"
)

// TestMayExceedBoundsEstimate: whenever MayExceed says no, the estimate is
// at or under n, for keys of every size; and it says no for small keys
// (it would save nothing otherwise).
func TestMayExceedBoundsEstimate(t *testing.T) {
	for _, p := range []int{4, 6, 8} {
		s, err := NewSpread(64, 2, p)
		if err != nil {
			t.Fatal(err)
		}
		item := uint64(0)
		for key := uint64(1); key <= 64; key++ {
			k := hashmix.Mix(key)
			items := int(key * key) // 1 .. 4096 items
			for range items {
				item++
				s.Add(k, hashmix.Mix(item))
			}
			est := s.Estimate(k)
			for _, n := range []float64{1, 10, 50, 100, 300, 1000, 5000} {
				if !s.MayExceed(k, n) && est > n {
					t.Fatalf("p %d key of %d items: MayExceed(%v) false, estimate %v", p, items, n, est)
				}
			}
			if items <= 4 && s.MayExceed(k, 100*float64(int(1)<<p)/64) {
				t.Errorf("p %d: a key of %d items may exceed %v", p, items, 100*float64(int(1)<<p)/64)
			}
		}
	}
}
