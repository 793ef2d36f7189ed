package cms

import (
	"testing"

	"github.com/flowmon/flowmon/internal/testutil/testgate"
)

// The tests below check the Add protocol of the package doc on a model,
// over every interleaving of its atomic steps: the loads of the key's
// counters in row order, each raise (the CAS loop's successful CAS, or its
// finding the counter high enough), and the final CAS. Counters of other
// keys do not move in the model; a start with unequal counters stands for
// what other keys left.

const modelMaxRows, modelMaxAdds = 4, 3

type modelAdd struct {
	n    int8
	pc   int8 // < 0: done; < d: loading row pc; else raising row pc-d; d+d: the final CAS
	m, t int8
	j    int8
}

type modelState struct {
	c    [modelMaxRows]int8
	adds [modelMaxAdds]modelAdd
}

type modelCheck struct {
	d, k       int
	seen       map[modelState]bool
	inexact    int // final CASes that did not move the minimum from m to t
	unreported int // steps other than a final CAS that moved the minimum
}

func (mc *modelCheck) min(s *modelState) int8 {
	m := s.c[0]
	for r := 1; r < mc.d; r++ {
		m = min(m, s.c[r])
	}
	return m
}

// step runs one atomic step of add a; it reports whether it was a
// successful final CAS.
func (mc *modelCheck) step(s *modelState, a *modelAdd) bool {
	d := int8(mc.d)
	switch {
	case a.pc < d: // load row pc
		v := s.c[a.pc]
		if a.pc == 0 || v < a.m {
			a.m, a.j = v, a.pc
		}
		a.pc++
		if a.pc == d {
			a.t = a.m + a.n
		}
		if a.pc == d && a.j == 0 {
			a.pc++ // skip raising row j
		}
	case a.pc < d+d: // raise row pc-d
		r := a.pc - d
		s.c[r] = max(s.c[r], a.t)
		a.pc++
		if a.pc-d == a.j {
			a.pc++
		}
	default: // final CAS
		if s.c[a.j] == a.m {
			s.c[a.j] = a.t
			a.pc = -1
			return true
		}
		a.pc = 0
	}
	return false
}

func (mc *modelCheck) explore(s modelState) {
	if mc.seen[s] {
		return
	}
	mc.seen[s] = true
	for i := range mc.k {
		if s.adds[i].pc < 0 {
			continue
		}
		next := s
		a := &next.adds[i]
		m0 := mc.min(&next)
		wasM, wasT := a.m, a.t
		cas := mc.step(&next, a)
		m1 := mc.min(&next)
		switch {
		case cas && (m0 != wasM || m1 != wasT):
			mc.inexact++
		case !cas && m1 != m0:
			mc.unreported++
		}
		mc.explore(next)
	}
}

// check explores every interleaving of Adds of ns from counters start.
func checkModel(start []int8, ns []int8) (inexact, unreported int) {
	mc := &modelCheck{d: len(start), k: len(ns), seen: map[modelState]bool{}}
	var s modelState
	copy(s.c[:], start)
	for i, n := range ns {
		s.adds[i] = modelAdd{n: n}
	}
	for i := len(ns); i < modelMaxAdds; i++ {
		s.adds[i].pc = -1
	}
	mc.explore(s)
	return mc.inexact, mc.unreported
}

// starts lists every vector of d counters in [0, hi].
func starts(d int, hi int8) [][]int8 {
	if d == 0 {
		return [][]int8{nil}
	}
	var out [][]int8
	for _, p := range starts(d-1, hi) {
		for v := int8(0); v <= hi; v++ {
			out = append(out, append(append([]int8(nil), p...), v))
		}
	}
	return out
}

// TestModelAtMostOnce: in every interleaving, from any counters, every
// successful final CAS moves the key's minimum from exactly m to exactly t.
func TestModelAtMostOnce(t *testing.T) {
	for _, d := range []int{1, 2, 3} {
		for _, st := range starts(d, 2) {
			for _, ns := range [][]int8{{1, 1, 1}, {1, 2, 3}} {
				if inexact, _ := checkModel(st, ns); inexact != 0 {
					t.Errorf("start %v adds %v: %d final CASes not an exact step", st, ns, inexact)
				}
			}
		}
	}
}

// TestModelExactlyOnce: the key's minimum moves only at final CASes, from
// equal counters with three overlapping Adds, and from any counters with
// two. FLOWMON_LONG=1 checks four rows and counters up to 3 apart.
func TestModelExactlyOnce(t *testing.T) {
	maxD, hi := 3, int8(2)
	if testgate.Enabled() {
		maxD, hi = 4, 3
	}
	for d := 1; d <= maxD; d++ {
		for _, ns := range [][]int8{{1, 1, 1}, {1, 2, 3}, {3, 1, 2}} {
			if _, un := checkModel(make([]int8, d), ns); un != 0 {
				t.Errorf("%d equal counters, adds %v: %d unreported steps", d, ns, un)
			}
		}
		for _, st := range starts(d, hi) {
			for _, ns := range [][]int8{{1, 1}, {1, 2}, {2, 1}, {1, 3}, {2, 3}, {3, 1}} {
				if _, un := checkModel(st, ns); un != 0 {
					t.Errorf("start %v adds %v: %d unreported steps", st, ns, un)
				}
			}
		}
	}
}

// TestModelThreeAddsUnequal pins the limit the package doc states: after
// other keys left the counters unequal, three overlapping Adds of the key
// can move its minimum outside a final CAS.
func TestModelThreeAddsUnequal(t *testing.T) {
	if _, un := checkModel([]int8{2, 1}, []int8{1, 2, 3}); un == 0 {
		t.Fatal("no unreported step from counters (2, 1) with adds 1, 2, 3; the package doc says there is one")
	}
}
