package cms

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// step is what one Add returned.
type step struct{ before, after uint32 }

// addAll runs g goroutines; goroutine i calls Add for every (key, n) that
// work(i) yields and records the returned steps per key.
func addAll(s *Sketch, g int, work func(i int, add func(h uint64, n uint32))) map[uint64][]step {
	var mu sync.Mutex
	all := map[uint64][]step{}
	var wg sync.WaitGroup
	for i := range g {
		wg.Go(func() {
			mine := map[uint64][]step{}
			work(i, func(h uint64, n uint32) {
				b, a := s.Add(h, n)
				mine[h] = append(mine[h], step{b, a})
			})
			mu.Lock()
			for h, st := range mine {
				all[h] = append(all[h], st...)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return all
}

// TestCrossingExactlyOnce: one key, 2 to 4 goroutines adding to it at
// once. The steps (before, after] the Adds return tile (0, estimate]
// exactly, so every threshold up to the estimate is seen by exactly one
// Add, and the estimate is the exact sum.
func TestCrossingExactlyOnce(t *testing.T) {
	const adds = 20_000
	for _, g := range []int{2, 3, 4} {
		for _, d := range []int{1, 3, 5} {
			t.Run(fmt.Sprintf("goroutines=%d/depth=%d", g, d), func(t *testing.T) {
				s := mustNew(t, Options{Width: 8, Depth: d})
				const key = 42
				var want uint64
				for i := range g {
					r := rand.New(rand.NewPCG(uint64(i), 9))
					for range adds {
						want += uint64(1 + r.IntN(3))
					}
				}
				steps := addAll(s, g, func(i int, add func(uint64, uint32)) {
					r := rand.New(rand.NewPCG(uint64(i), 9))
					for range adds {
						add(key, uint32(1+r.IntN(3)))
					}
				})[key]
				slices.SortFunc(steps, func(a, b step) int { return int(a.before) - int(b.before) })
				at := uint32(0)
				for _, st := range steps {
					if st.before != at {
						t.Fatalf("a step (%d, %d] where (%d, ...] was expected: thresholds in between reported %s",
							st.before, st.after, at, map[bool]string{true: "twice", false: "never"}[st.before < at])
					}
					at = st.after
				}
				if e := s.Estimate(key); uint64(e) != want || e != at {
					t.Fatalf("estimate %d, steps reach %d, added %d", e, at, want)
				}
			})
		}
	}
}

// TestCrossingAtMostOnce: many keys in a narrow sketch (every counter
// shared), goroutines adding to the same keys at once. For every key the
// steps its Adds report are disjoint, and its estimate is at least the
// sum added to it.
func TestCrossingAtMostOnce(t *testing.T) {
	const g, keys, adds = 4, 200, 20_000
	s := mustNew(t, Options{Width: 32, Depth: 4, Seed: 5})
	added := make([]map[uint64]uint64, g)
	all := addAll(s, g, func(i int, add func(uint64, uint32)) {
		added[i] = map[uint64]uint64{}
		r := rand.New(rand.NewPCG(uint64(i), 10))
		for range adds {
			h, n := uint64(r.IntN(keys)), uint32(1+r.IntN(4))
			add(h, n)
			added[i][h] += uint64(n)
		}
	})
	for h, steps := range all {
		var sum uint64
		for i := range g {
			sum += added[i][h]
		}
		if e := uint64(s.Estimate(h)); e < sum {
			t.Fatalf("key %d: estimate %d below the %d added", h, e, sum)
		}
		slices.SortFunc(steps, func(a, b step) int { return int(a.before) - int(b.before) })
		for i := 1; i < len(steps); i++ {
			if steps[i].before < steps[i-1].after {
				t.Fatalf("key %d: steps (%d, %d] and (%d, %d] overlap", h, steps[i-1].before, steps[i-1].after, steps[i].before, steps[i].after)
			}
		}
	}
	var total uint64
	for i := range g {
		for _, n := range added[i] {
			total += n
		}
	}
	if s.Total() != total {
		t.Fatalf("Total %d, added %d", s.Total(), total)
	}
}

// TestConcurrentEstimateReset runs Add, Estimate and Reset at once (for
// the race detector) and checks that a key's estimate read by one
// goroutine never decreases between its own Resets.
func TestConcurrentEstimateReset(t *testing.T) {
	s := mustNew(t, Options{Width: 256, Depth: 3})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := range 3 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 11))
			for {
				select {
				case <-stop:
					return
				default:
				}
				s.Add(r.Uint64N(1000), 1)
			}
		})
	}
	for round := range 20 {
		prev := uint32(0)
		for range 2000 {
			e := s.Estimate(7)
			if e < prev {
				t.Fatalf("round %d: estimate went from %d to %d", round, prev, e)
			}
			prev = e
			s.Add(7, 1)
		}
		s.Reset()
	}
	close(stop)
	wg.Wait()
}
