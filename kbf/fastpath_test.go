package kbf

import (
	"math/rand/v2"
	"testing"
)

// TestDecodeSidonMatchesDecode compares the singleton fast path with
// decode on random cells: each cell holds the XOR of 1-4 random codes
// (sometimes the key's own code, sometimes garbage) and a random counter,
// for 32- and 16-bit cells and 2- and 3-bit counters (a 2-bit counter
// saturates at 3).
func TestDecodeSidonMatchesDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, o := range []Options{
		{Capacity: 1000, FPRate: 1e-3, Values: 3000, Encoder: Sidon},
		{Capacity: 1000, FPRate: 1e-3, Values: 40, Encoder: Sidon, CellBits: 16},
		{Capacity: 1000, FPRate: 1e-3, Values: 3000, Encoder: Sidon, CounterBits: 2},
		{Capacity: 1000, FPRate: 1e-6, Values: 100, Encoder: Sidon, CounterBits: 5},
	} {
		f, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		code := func() uint32 { return f.enc.code(uint32(rng.IntN(o.Values))) }
		var seen [3]int
		for trial := 0; trial < 200000; trial++ {
			x := code()
			var cells [MaxK]uint32
			for j := 0; j < f.k; j++ {
				c := uint32(1 + rng.IntN(int(f.ctrMask)))
				e := x
				switch rng.IntN(8) {
				case 0:
					e = code() // another key's code
				case 1:
					e = rng.Uint32() & f.encMask // garbage
				}
				for i := uint32(1); i < c && i < 4; i++ {
					e ^= code()
				}
				if rng.IntN(4) == 0 && c > 1 && c < 4 {
					c-- // the cell's count and contents disagree
				}
				cells[j] = e<<f.ctrBits | c
			}
			want, wr := f.decode(&cells)
			first := 0
			for first < f.k && cells[first]&f.ctrMask != 1 {
				first++
			}
			if first == f.k {
				continue // no singleton: decode's steps 3-5 only
			}
			got, gr := f.decodeSidon(&cells, first)
			seen[gr]++
			if gr != wr || (gr == Found && got != want) {
				t.Fatalf("%+v cells %x: decode %v %#x, fast path %v %#x", o, cells[:f.k], wr, want, gr, got)
			}
		}
		t.Logf("%d/%d bits: fast path absent %d found %d unknown %d", f.opt.CellBits, f.opt.CounterBits, seen[Absent], seen[Found], seen[Unknown])
		if seen[Absent] == 0 || seen[Found] == 0 {
			t.Errorf("%+v: the trials do not reach both answers: %v", o, seen)
		}
	}
}

// TestIsPair checks isPair against pair, which solves for the two
// codes, on XORs of code pairs, of single codes, of triples and on random
// words, of one bit more than a code and of 32 bits.
func TestIsPair(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ values, width int }{{40, 29}, {3000, 29}, {MaxSidonValues, 29}, {3000, 24}, {50, 13}} {
		values := c.values
		e, err := newSidon(values, c.width)
		if err != nil {
			t.Fatal(err)
		}
		code := func() uint32 { return e.code(uint32(rng.IntN(values))) }
		for i := 0; i < 300000; i++ {
			a, b, c := code(), code(), code() // drawn apart: staticcheck reads code() ^ code() as x ^ x
			var r uint32
			switch i % 5 {
			case 0:
				r = a ^ b
			case 1:
				r = a
			case 2:
				r = a ^ b ^ c
			case 3:
				r = rng.Uint32() & (1<<(2*e.f.q+1) - 1) // one bit above the code: garbage
			default:
				r = rng.Uint32() // high halves past isPair's table, when q < 15
			}
			if _, _, want := e.pair(r); e.isPair(r) != want {
				t.Fatalf("values %d: isPair(%#x) = %v, pair %v", values, r, !want, want)
			}
		}
	}
}
