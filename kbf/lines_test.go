package kbf

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestLineSubsetsMatchLocate: the line form's cells are locate's.
func TestLineSubsetsMatchLocate(t *testing.T) {
	needLineCheck(t)
	for _, lines := range []int{2, 3, 4} {
		f := newT(t, Options{Capacity: 10000, FPRate: 1e-3, Values: 3000, Encoder: Sidon, Layout: Blocked, BlockLines: lines})
		if !f.byLines {
			t.Fatalf("%d lines: not by lines", lines)
		}
		for key := uint64(0); key < 10000; key++ {
			var idx [MaxK]int
			var lq lineQuery
			f.locate(key, &idx)
			f.locateLines(key, &lq)
			var want, got [MaxK]int
			n := 0
			for g := 0; g < f.groups; g++ {
				line := lq.line[g]
				for c := 0; c < 16; c++ {
					if lq.mask[g]>>c&1 != 0 {
						got[n] = line + c
						n++
					}
				}
				for j := f.firsts[g]; j < f.firsts[g+1]; j++ {
					want[j] = idx[j]
				}
			}
			if n != f.k || !sameSet(want[:f.k], got[:n]) {
				t.Fatalf("%d lines, key %d: locate %v, locateLines %v", lines, key, want[:f.k], got[:n])
			}
		}
	}
}

func sameSet(a, b []int) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestLinesMatchQueryAt compares the line form with queryAt, cell by cell,
// with two, three and four lines a key (each a path of lineCheck's merge),
// on filters loaded by real operations from half to three times their
// p-capacity (three times saturates counters and leaves many keys
// undecodable): stored keys, their values after updates and deletes, and
// keys never stored, with counts of each answer so a path left untested
// shows.
func TestLinesMatchQueryAt(t *testing.T) {
	needLineCheck(t)
	rng := rand.New(rand.NewPCG(3, 4))
	var seen [3]int
	for _, lines := range []int{2, 3, 4} {
		for _, load := range []float64{0.5, 1, 3} {
			f := newT(t, Options{Capacity: 20000, FPRate: 1e-3, Values: 3000, Encoder: Sidon, Layout: Blocked, BlockLines: lines})
			n := int(load * 20000)
			for i := 0; i < n; i++ {
				f.Insert(uint64(i), uint32(rng.IntN(3000)))
			}
			for i := 0; i < n/10; i++ { // refused or not, both leave real cells
				f.Update(uint64(rng.IntN(n)), uint32(rng.IntN(3000)), uint32(rng.IntN(3000)))
				f.Delete(uint64(rng.IntN(n)), uint32(rng.IntN(3000)))
			}
			compareLines(t, f, 2*n, &seen)
		}
	}
	allAnswersSeen(t, seen)
}

// TestLinesMatchQueryAtOnRandomCells fills a filter with random cells:
// counters 0-7, and contents that are a code, the XOR of 2-4 codes, or
// garbage, where a singleton always holds a code (a singleton that is no
// code, which only misuse makes, is Unknown when queryAt meets it first
// and Absent when the line form meets another singleton first).
func TestLinesMatchQueryAtOnRandomCells(t *testing.T) {
	needLineCheck(t)
	rng := rand.New(rand.NewPCG(5, 6))
	var seen [3]int
	for _, lines := range []int{2, 3} {
		f := newT(t, Options{Capacity: 2000, FPRate: 1e-3, Values: 3000, Encoder: Sidon, Layout: Blocked, BlockLines: lines})
		codes := []uint32{f.enc.code(1), f.enc.code(2), f.enc.code(3)} // few codes: cells agree often
		code := func() uint32 {
			if rng.IntN(4) == 0 {
				return f.enc.code(uint32(rng.IntN(3000)))
			}
			return codes[rng.IntN(len(codes))]
		}
		for i := range f.c32 {
			c := uint32(rng.IntN(8))
			if rng.IntN(3) == 0 {
				c = 1 + uint32(rng.IntN(3))
			}
			e := code()
			switch {
			case c == 0:
				e = 0
			case c > 1 && rng.IntN(6) == 0:
				e = rng.Uint32() & f.encMask
			default:
				for j := uint32(1); j < c && j < 4; j++ {
					e ^= code()
				}
			}
			f.c32[i] = e<<f.ctrBits | c
		}
		compareLines(t, f, 200000, &seen)
	}
	allAnswersSeen(t, seen)
}

func needLineCheck(t *testing.T) {
	if !hasLineCheck {
		t.Skip("no AVX-512 on this CPU: queries go cell by cell")
	}
}

// allAnswersSeen fails t unless the queries gave each answer, so that no
// path of the comparison went untested.
func allAnswersSeen(t *testing.T, seen [3]int) {
	t.Helper()
	if seen[Found] == 0 || seen[Absent] == 0 || seen[Unknown] == 0 {
		t.Errorf("answers seen %v: some path untested", seen)
	}
}

// compareLines queries keys 0..n by Query (the line form) and by locate
// and queryAt, and QueryBatch, and compares answers and Stats.
func compareLines(t *testing.T, f *Filter, n int, seen *[3]int) {
	t.Helper()
	st := f.st
	keys := make([]uint64, n)
	want := make([]uint32, n)
	wantR := make([]Result, n)
	for i := range keys {
		keys[i] = uint64(i)
		var idx [MaxK]int
		f.locate(keys[i], &idx)
		want[i], wantR[i] = f.queryAt(&idx)
		seen[wantR[i]]++
	}
	scalar := f.st
	f.st = st
	got := make([]uint32, n)
	gotR := make([]Result, n)
	for i, key := range keys {
		got[i], gotR[i] = f.Query(key)
	}
	if f.st != scalar {
		t.Errorf("stats: by lines %+v, by cells %+v", f.st, scalar)
	}
	batch := make([]uint32, n)
	batchR := make([]Result, n)
	f.QueryBatch(keys, batch, batchR)
	for i := range keys {
		if gotR[i] != wantR[i] || (wantR[i] == Found && got[i] != want[i]) {
			t.Fatalf("key %d: by cells %v %d, by lines %v %d", i, wantR[i], want[i], gotR[i], got[i])
		}
		if batchR[i] != gotR[i] || batch[i] != got[i] {
			t.Fatalf("key %d: Query %v %d, QueryBatch %v %d", i, gotR[i], got[i], batchR[i], batch[i])
		}
	}
}

// TestLinesMalformedSingleton: a key whose cells all hold one singleton
// that is no code (only a corrupt filter has one; the other tests never
// meet it) gets queryAt's answer from the line form.
func TestLinesMalformedSingleton(t *testing.T) {
	needLineCheck(t)
	for _, lines := range []int{2, 3} {
		f := newT(t, Options{Capacity: 2000, FPRate: 1e-3, Values: 3000, Encoder: Sidon, Layout: Blocked, BlockLines: lines})
		q := uint(f.sid.f.q)
		above := f.sid.values + 1 // a field element past the values, with its cube
		for key := uint64(0); key < 200; key++ {
			bad := f.enc.code(uint32(key)) ^ 1<<q // high half flipped
			if key%2 == 1 {
				bad = above | uint32(f.sid.f.cube[above])<<q
			}
			var idx [MaxK]int
			f.locate(key, &idx)
			for _, i := range idx[:f.k] {
				f.c32[i] = bad<<f.ctrBits | 1
			}
			wantV, want := f.queryAt(&idx)
			gotV, got := f.Query(key)
			if want == Found || got != want || gotV != wantV {
				t.Fatalf("%d lines, key %d: by cells %v %d, by lines %v %d", lines, key, want, wantV, got, gotV)
			}
			for _, i := range idx[:f.k] {
				f.c32[i] = 0
			}
		}
	}
}
