package cms

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

func TestNoAllocs(t *testing.T) {
	s := mustNew(t, Options{Epsilon: 0.001, Delta: 0.001})
	var h uint64
	if a := testing.AllocsPerRun(1000, func() { h += 0x9e3779b97f4a7c15; s.Add(h, 1) }); a != 0 {
		t.Errorf("Add: %v allocations", a)
	}
	if a := testing.AllocsPerRun(1000, func() { h++; s.Estimate(h) }); a != 0 {
		t.Errorf("Estimate: %v allocations", a)
	}
}

// TestFixedMemory adds 10 million random keys, with one heavy key among
// them: the heap does not grow, and the heavy key's estimate is within
// [true, true + ε·N]. Under the race detector (-race), 1 million.
func TestFixedMemory(t *testing.T) {
	const every = 10
	keys := 10_000_000
	if raceEnabled {
		keys = 1_000_000
	}
	s := mustNew(t, Options{Epsilon: 0.0001, Delta: 0.01})
	const heavy = 0xfeedface
	r := rand.New(rand.NewPCG(1, 1))
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	var heavyCount uint32
	for i := range keys {
		s.Add(r.Uint64(), 1)
		if i%every == 0 {
			s.Add(heavy, 2)
			heavyCount += 2
		}
	}
	runtime.ReadMemStats(&m1)
	grew := int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
	allocated := m1.TotalAlloc - m0.TotalAlloc
	t.Logf("sketch %d bytes; heap grew %d bytes, %d bytes allocated over %d Adds", s.Bytes(), grew, allocated, keys+keys/every)
	if grew > 1<<20 || allocated > 1<<20 {
		t.Errorf("heap grew %d bytes and %d bytes were allocated; want under 1 MiB", grew, allocated)
	}
	e, bound := s.Estimate(heavy), s.Epsilon()*float64(s.Total())
	t.Logf("heavy key: true %d, estimate %d, ε·N %.0f", heavyCount, e, bound)
	if e < heavyCount || float64(e-heavyCount) > bound {
		t.Errorf("heavy key estimate %d outside [%d, %d + %.0f]", e, heavyCount, heavyCount, bound)
	}
}
