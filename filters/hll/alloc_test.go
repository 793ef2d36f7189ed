package hll

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

func TestNoAllocs(t *testing.T) {
	h := mustHLL(t, 14)
	s := mustSpread(t, SpreadOptions{RelErr: 0.1, Keys: 1000, Delta: 0.01})
	bs := mustBits(t, 1000, 2, 64, 0)
	var x uint64
	for name, f := range map[string]func(){
		"HLL.Add":            func() { x += 0x9e3779b97f4a7c15; h.Add(x) },
		"HLL.Estimate":       func() { h.Estimate() },
		"Spread.Add":         func() { x += 0x9e3779b97f4a7c15; s.Add(x>>50, x) },
		"Spread.Estimate":    func() { x++; s.Estimate(x) },
		"BitSpread.Add":      func() { x += 0x9e3779b97f4a7c15; bs.Add(x>>50, x) },
		"BitSpread.Estimate": func() { x++; bs.Estimate(x) },
	} {
		if a := testing.AllocsPerRun(1000, f); a != 0 {
			t.Errorf("%s: %v allocations", name, a)
		}
	}
}

// TestFixedMemory adds 10 million random keys (with an item each) to a
// Spread, and one key with 5000 distinct items among them: the heap does
// not grow, and that key's estimate is within its bound (at four standard
// errors: one sample, which three would fail one run in 400). Under the
// race detector, 1 million.
func TestFixedMemory(t *testing.T) {
	const heavyItems = 5000
	keys := 10_000_000
	if raceEnabled {
		keys = 1_000_000
	}
	s := mustSpread(t, SpreadOptions{RelErr: 0.13, Keys: 50_000, Delta: 0.02})
	const heavy = 0xfeedface
	every := keys / heavyItems
	r := rand.New(rand.NewPCG(1, 1))
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	for i := range keys {
		s.Add(r.Uint64(), r.Uint64())
		if i%every == 0 {
			s.Add(heavy, r.Uint64())
		}
	}
	runtime.ReadMemStats(&m1)
	grew := int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
	allocated := m1.TotalAlloc - m0.TotalAlloc
	t.Logf("spread %d bytes; heap grew %d bytes, %d bytes allocated over %d Adds", s.Bytes(), grew, allocated, keys+heavyItems)
	if grew > 1<<20 || allocated > 1<<20 {
		t.Errorf("heap grew %d bytes and %d bytes were allocated; want under 1 MiB", grew, allocated)
	}
	// Every random key is new: D is keys + heavyItems distinct pairs.
	se, extra := s.StdError(), s.CollisionBound(float64(keys+heavyItems))
	e := s.Estimate(heavy)
	lo, hi := heavyItems*(1-4*se), (heavyItems+extra)*(1+4*se)
	t.Logf("heavy key: %d items, estimate %.0f, bound [%.0f, %.0f] (e·D/w = %.0f)", heavyItems, e, lo, hi, extra)
	if e < lo || e > hi {
		t.Errorf("heavy key estimate %.0f outside [%.0f, %.0f]", e, lo, hi)
	}
}
