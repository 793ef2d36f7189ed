package hll

import (
	"math/rand/v2"
	"sync"
	"testing"
)

// TestConcurrentHLL: goroutines adding at once leave exactly the
// registers of the same items added in sequence (each register ends at
// the largest rank given to it), while others read estimates that never
// decrease.
func TestConcurrentHLL(t *testing.T) {
	const g, n = 4, 50_000
	h, seq := mustHLL(t, 8), mustHLL(t, 8)
	items := make([][]uint64, g)
	for i := range items {
		r := rand.New(rand.NewPCG(uint64(i), 1))
		for range n {
			items[i] = append(items[i], r.Uint64N(100_000))
		}
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		prev := 0.0
		for {
			select {
			case <-done:
				return
			default:
			}
			e := h.Estimate()
			if e < prev {
				t.Errorf("estimate went down from %g to %g", prev, e)
				return
			}
			prev = e
		}
	})
	var adders sync.WaitGroup
	for i := range g {
		adders.Go(func() {
			for _, it := range items[i] {
				h.Add(it)
			}
		})
	}
	adders.Wait()
	close(done)
	wg.Wait()
	for i := range g {
		for _, it := range items[i] {
			seq.Add(it)
		}
	}
	for i := range h.words {
		if h.words[i].Load() != seq.words[i].Load() {
			t.Fatalf("word %d: concurrent %#x, sequential %#x", i, h.words[i].Load(), seq.words[i].Load())
		}
	}
}

// TestConcurrentSpread: the same for a Spread whose keys all share cells,
// with Merge, Estimate and Reset of another sketch running meanwhile (for
// the race detector).
func TestConcurrentSpread(t *testing.T) {
	const g, n = 4, 30_000
	o := SpreadOptions{Width: 16, Depth: 3, Precision: 5, Seed: 3}
	s, seq, other := mustSpread(t, o), mustSpread(t, o), mustSpread(t, o)
	type pair struct{ k, it uint64 }
	work := make([][]pair, g)
	for i := range work {
		r := rand.New(rand.NewPCG(uint64(i), 2))
		for range n {
			work[i] = append(work[i], pair{r.Uint64N(100), r.Uint64N(10_000)})
		}
	}
	var wg sync.WaitGroup
	for i := range g {
		wg.Go(func() {
			for j, p := range work[i] {
				s.Add(p.k, p.it)
				other.Add(p.k, p.it)
				if j%1000 == 0 {
					s.Estimate(p.k)
					other.Reset()
				}
			}
		})
	}
	wg.Go(func() {
		for range 100 {
			if err := other.Merge(s); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	for i := range work {
		for _, p := range work[i] {
			seq.Add(p.k, p.it)
		}
	}
	for i := range s.words {
		if s.words[i].Load() != seq.words[i].Load() {
			t.Fatalf("word %d: concurrent %#x, sequential %#x", i, s.words[i].Load(), seq.words[i].Load())
		}
	}
}
