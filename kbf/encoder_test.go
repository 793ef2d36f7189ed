package kbf

import (
	"math/bits"
	"testing"

	"github.com/flowmon/flowmon/internal/testutil/testgate"
)

func TestSidonFieldAndPairs(t *testing.T) {
	for q := 2; q < len(primitive); q++ {
		g, err := newGF(q)
		if err != nil {
			t.Fatalf("q=%d: %v", q, err)
		}
		if len(g.rows) != q-1 {
			t.Errorf("q=%d: w^2+w has rank %d, want %d", q, len(g.rows), q-1)
		}
		// every c = w^2 + w is solved, and the root is a root.
		for w := uint32(0); w <= g.ord; w += 1 + g.ord/512 {
			c := g.mul(w, w) ^ w
			r, ok := g.solveQuad(c)
			if !ok || g.mul(r, r)^r != c {
				t.Fatalf("q=%d: solve(%d) = %d, %v", q, c, r, ok)
			}
		}
	}
	// exhaustive for q = 6: all 63 codes, all pairs decode, no pair XOR is a
	// code, all XORs distinct (the Sidon property).
	s, err := newSidon(63, 12)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint32]bool{}
	for v := uint32(0); v < 63; v++ {
		c := s.code(v)
		if got, ok := s.value(c); !ok || got != v || seen[c] {
			t.Fatalf("code %d: value %d %v dup %v", v, got, ok, seen[c])
		}
		seen[c] = true
	}
	for a := uint32(0); a < 63; a++ {
		for b := a + 1; b < 63; b++ {
			r := s.code(a) ^ s.code(b)
			if seen[r] {
				t.Fatalf("xor of %d,%d collides", a, b)
			}
			seen[r] = true
			x, y, ok := s.pair(r)
			if !ok || x != s.code(a) || y != s.code(b) {
				t.Fatalf("pair(%d,%d) = %x %x %v", a, b, x, y, ok)
			}
		}
	}
	// 16383 codes in 28 bits, at the counting bound.
	if s, _ := newSidon(MaxSidonValues, 29); s.bits() != 28 || MinCodeBits(1<<14) != 28 {
		t.Errorf("sidon %d codes in %d bits, bound for 2^14 codes %d", MaxSidonValues, s.bits(), MinCodeBits(1<<14))
	}
}

// checkSidonSet verifies by brute force that codes and pairwise XORs are
// all distinct and nonzero.
func checkSidonSet(t *testing.T, codes []uint32) {
	t.Helper()
	seen := map[uint32]bool{0: true}
	for _, c := range codes {
		if seen[c] {
			t.Fatalf("code %d repeats or is 0", c)
		}
		seen[c] = true
	}
	for i := range codes {
		for j := i + 1; j < len(codes); j++ {
			r := codes[i] ^ codes[j]
			if seen[r] {
				t.Fatalf("xor %d^%d = %d collides", codes[i], codes[j], r)
			}
			seen[r] = true
		}
	}
}

func TestGreedyCodes(t *testing.T) {
	codes, _, _, err := GreedyCodes(4, 32)
	if err != nil || len(codes) != 4 || codes[0] != 1 || codes[1] != 2 || codes[2] != 4 || codes[3] != 8 {
		t.Fatalf("greedy(4) = %v %v, paper: 0001 0010 0100 1000", codes, err)
	}
	checkSidonSet(t, codes)
	codes, cs, ps, err := GreedyCodes(300, 32)
	if err != nil {
		t.Fatal(err)
	}
	checkSidonSet(t, codes)
	for i := 1; i < len(codes); i++ {
		if codes[i] <= codes[i-1] {
			t.Fatal("codes not ascending")
		}
	}
	for i, a := range codes {
		if !cs.has(a) || ps.has(a) {
			t.Fatal("bitmaps wrong for a code")
		}
		for _, b := range codes[i+1:] {
			if !ps.has(a^b) || cs.has(a^b) {
				t.Fatal("bitmaps wrong for a pair")
			}
		}
	}
	// Section III-C: 7 values cannot be done in 5 bits; n = 100 needs at
	// least 13 bits.
	if b, _ := GreedyBits(7); b < 6 || MinCodeBits(7) != 5 {
		t.Errorf("7 codes: greedy %d bits, bound %d", b, MinCodeBits(7))
	}
	b100, _ := GreedyBits(100)
	if MinCodeBits(100) != 13 || b100 < 13 {
		t.Errorf("100 codes: bound %d, greedy %d", MinCodeBits(100), b100)
	}
	t.Logf("greedy: 100 codes in %d bits (bound 13)", b100)
	if _, _, _, err := GreedyCodes(300, 12); err == nil {
		t.Error("300 codes fit in 12 bits?")
	}
}

// TestGreedyFigure2 measures the greedy search against the counting bound
// (paper Fig. 2). Slow (about 20 minutes, 8192 codes need 2^32-bit maps,
// 1 GiB): long (internal/testutil/testgate). Its figures are in
// docs/results/kbf.md ("Greedy codes against the counting bound").
func TestGreedyFigure2(t *testing.T) {
	testgate.Long(t)
	for _, n := range []int{100, 256, 512, 1024, 2048, 3000, 4096, 8192} {
		b, err := GreedyBits(n)
		if err != nil {
			t.Fatal(err)
		}
		s := 2 * sidonDegree(n)
		t.Logf("n=%5d bound=%2d greedy=%2d sidon=%2d", n, MinCodeBits(n), b, s)
	}
}

func TestRegressionLookup(t *testing.T) {
	g, err := newGreedy(1000, 32)
	if err != nil {
		t.Fatal(err)
	}
	maxProbes, sum, bsum := 0, 0, 0
	for i, c := range g.codes {
		j, p := g.regressionIndex(c)
		k, bp := g.binaryIndex(c)
		sum += p
		bsum += bp
		if j != i || k != i {
			t.Fatalf("code %d at %d: regression %d binary %d", c, i, j, k)
		}
		maxProbes = max(maxProbes, p)
	}
	for c := uint32(0); c < g.codes[len(g.codes)-1]+10; c += 997 {
		j, _ := g.regressionIndex(c)
		k, _ := g.binaryIndex(c)
		if (j >= 0) != g.codeSet.has(c) || j != k {
			t.Fatalf("non-code %d: regression %d binary %d", c, j, k)
		}
	}
	t.Logf("fit %.1f + %.3f i + %.5f i^2, avg step %.1f, probes mean %.2f max %d (binary mean %.2f, bound %d)",
		g.c0, g.c1, g.c2, g.avg, float64(sum)/float64(len(g.codes)), maxProbes,
		float64(bsum)/float64(len(g.codes)), bits.Len(uint(len(g.codes))))
	if maxProbes > 2*bits.Len(uint(len(g.codes))) {
		t.Errorf("regression lookup took %d probes", maxProbes)
	}
}
