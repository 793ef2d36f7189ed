package hll

import (
	"errors"
	"math"
	"math/bits"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

func mustBits(tb testing.TB, width, depth, cellBits int, seed uint64) *BitSpread {
	tb.Helper()
	s, err := NewBitSpread(width, depth, cellBits, seed)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func TestNewBitSpread(t *testing.T) {
	for _, tc := range []struct {
		name              string
		width, depth, bit int
		errContains       string
	}{
		{"ok", 4096, 2, 64, ""},
		{"256", 10, 3, 256, ""},
		{"width", 0, 2, 64, "width 0 must be at least 1"},
		{"depth", 10, 33, 64, "depth 33 must be in [1, 32]"},
		{"bits 32", 10, 2, 32, "cell bits 32 must be a power of two in [64, 256]"},
		{"bits 96", 10, 2, 96, "cell bits 96 must be a power of two"},
		{"bits 512", 10, 2, 512, "cell bits 512 must be"},
		{"huge", 1 << 30, 32, 256, "need more than 17179869184 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewBitSpread(tc.width, tc.depth, tc.bit, 0)
			if tc.errContains == "" {
				if err != nil || s.Width() != tc.width || s.Depth() != tc.depth || s.CellBits() != tc.bit ||
					s.Bytes() != tc.width*tc.depth*tc.bit/8 {
					t.Fatalf("NewBitSpread = %v, %v", s, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.errContains) || !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("error %v; want one containing %q wrapping ErrInvalidOptions", err, tc.errContains)
			}
		})
	}
}

// TestCellBitsFor: the fewest bits whose linear count meets the error at
// n and stays well inside the bitmap, or none.
func TestCellBitsFor(t *testing.T) {
	for _, tc := range []struct {
		n, relErr float64
		want      int
	}{
		{100, 0.13, 64},  // error 0.119, 13 zero bits of 64 expected
		{100, 0.10, 128}, // 64 bits: 0.119 > 0.10
		{200, 0.13, 128}, // 200 > 64·ln 8 = 133
		{500, 0.13, 256}, // 500 <= 256·ln 8 = 532, error 0.080
		{600, 0.13, 0},   // past 256 bits' range: a Spread
		{10000, 0.13, 0}, // a Spread
		{100, 0.01, 0},   // no bitmap of at most 256 bits is that exact
		{1, 0.13, 64},    // trivially
	} {
		if got := CellBitsFor(tc.n, tc.relErr); got != tc.want {
			t.Errorf("CellBitsFor(%v, %v) = %d, want %d (errors: 64 %.3f, 128 %.3f, 256 %.3f)", tc.n, tc.relErr, got, tc.want,
				LinearStdError(tc.n, 64), LinearStdError(tc.n, 128), LinearStdError(tc.n, 256))
		}
	}
	if LinearStdError(0, 64) != 0 {
		t.Error("LinearStdError(0) is not 0")
	}
}

// TestBitSpreadAccuracy: single cells against exact counts. Over 4000
// bitmaps a point, the relative root-mean-square error of n distinct items
// in b bits is within 15% of Whang et al.'s sqrt(b(e^t - t - 1))/n, and
// the bias within a third of it.
func TestBitSpreadAccuracy(t *testing.T) {
	const trials = 4000
	r := rand.New(rand.NewPCG(11, 11))
	for _, b := range []int{64, 128, 256} {
		for _, n := range []int{b / 4, b / 2, b, 2 * b} {
			s := mustBits(t, 1, 1, b, 0)
			var sum, sq float64
			for range trials {
				s.Clear()
				for range n {
					s.Add(1, r.Uint64())
				}
				rel := s.Estimate(1)/float64(n) - 1
				sum += rel
				sq += rel * rel
			}
			bias, rmse, want := sum/trials, math.Sqrt(sq/trials), LinearStdError(float64(n), b)
			t.Logf("b %3d n %3d: bias %+.4f rmse %.4f, formula %.4f", b, n, bias, rmse, want)
			if math.Abs(rmse/want-1) > 0.15 || math.Abs(bias) > want/3 {
				t.Errorf("b %d n %d: bias %+.4f rmse %.4f; formula %.4f", b, n, bias, rmse, want)
			}
		}
	}
}

// TestBitSpreadCells: every cell holds exactly the bits of the items of
// the keys that map to it (the plain reference: an item's bit is its HLL
// register), a key's estimate is the smallest linear count of its cells,
// at least its own bitmap's, and never decreases; Add reports a change
// exactly when a bit was new, with the estimate after it.
func TestBitSpreadCells(t *testing.T) {
	const b = 128
	s := mustBits(t, 50, 3, b, 9)
	p := uint(bits.TrailingZeros(b))
	lc := func(set map[uint64]bool) float64 {
		if len(set) == b {
			return b * math.Log(2*b)
		}
		return b * math.Log(b/float64(b-len(set)))
	}
	cellBits := map[uint64]map[uint64]bool{} // first word of a cell -> set bits
	own := map[uint64]map[uint64]bool{}
	last := map[uint64]float64{}
	r := rand.New(rand.NewPCG(6, 6))
	for range 20_000 {
		k, it := r.Uint64N(300), r.Uint64N(5000)
		idx, _ := register(it, p)
		var off [MaxDepth]uint64
		s.cells(k, &off)
		wantChange := false
		for _, o := range off[:s.depth] {
			if cellBits[o] == nil {
				cellBits[o] = map[uint64]bool{}
			}
			wantChange = wantChange || !cellBits[o][idx]
			cellBits[o][idx] = true
		}
		if own[k] == nil {
			own[k] = map[uint64]bool{}
		}
		own[k][idx] = true
		e, changed := s.Add(k, it)
		if changed != wantChange {
			t.Fatalf("key %d item %d: changed %v, want %v", k, it, changed, wantChange)
		}
		if changed && e != s.Estimate(k) {
			t.Fatalf("key %d: Add's estimate %g, Estimate %g", k, e, s.Estimate(k))
		}
		least := math.Inf(1)
		for _, o := range off[:s.depth] {
			least = min(least, lc(cellBits[o]))
		}
		got := s.Estimate(k)
		if math.Abs(got-least) > 1e-9*least {
			t.Fatalf("key %d: estimate %g, smallest cell by the reference %g", k, got, least)
		}
		if got < lc(own[k])-1e-9 {
			t.Fatalf("key %d: estimate %g below its own bitmap's %g", k, got, lc(own[k]))
		}
		if got < last[k] {
			t.Fatalf("key %d: estimate went down from %g to %g", k, last[k], got)
		}
		last[k] = got
	}
	s.Reset()
	for k := range uint64(300) {
		if e := s.Estimate(k); e != 0 {
			t.Fatalf("key %d: estimate %g after Reset", k, e)
		}
	}
}

// TestBitSpreadScanner: one source scanning ports among 20,000 sources
// touching 1 to 3 well-known ports each (about ten items of other keys in
// a cell), in the rules' shape (4096 cells, 2 rows, 64 bits for a
// threshold of 100), beside a Spread of 64 registers in the same shape fed
// the same pairs: a scanner of 150 ports is estimated above 100 and one
// of 60 below by both, no benign source comes near 100, and the two
// sketches' estimates of every key agree within a few items.
func TestBitSpreadScanner(t *testing.T) {
	const benign = 20_000
	port := func(p uint64) uint64 { return p*0x9e3779b97f4a7c15 ^ 0x5bd1e995 }
	src := func(i uint64) uint64 { return i*0xbf58476d1ce4e5b9 + 1 }
	for _, tc := range []struct {
		ports int
		above bool
	}{{150, true}, {60, false}} {
		bs := mustBits(t, 4096, 2, CellBitsFor(100, 0.13), 0)
		hs, err := NewSpread(4096, 2, PrecisionFor(0.13))
		if err != nil {
			t.Fatal(err)
		}
		add := func(k, it uint64) { bs.Add(k, it); hs.Add(k, it) }
		r := rand.New(rand.NewPCG(7, uint64(tc.ports)))
		const scanner = 0xdeadbeef
		for i, p := range r.Perm(65536)[:tc.ports] {
			add(scanner, port(uint64(p)))
			for k := i * benign / tc.ports; k < (i+1)*benign/tc.ports; k++ {
				for range 1 + r.IntN(3) {
					add(src(uint64(k)), port(uint64(r.IntN(1024))))
				}
			}
		}
		eb, eh := bs.Estimate(scanner), hs.Estimate(scanner)
		var worst, apart float64
		for k := range benign {
			b, h := bs.Estimate(src(uint64(k))), hs.Estimate(src(uint64(k)))
			worst = max(worst, b, h)
			apart = max(apart, math.Abs(b-h))
		}
		t.Logf("scanner of %d ports: bits %.1f, registers %.1f; largest benign %.1f, the two apart by at most %.1f; %d bytes against %d",
			tc.ports, eb, eh, worst, apart, bs.Bytes(), hs.Bytes())
		if (eb > 100) != tc.above || (eh > 100) != tc.above {
			t.Errorf("scanner of %d ports estimated at %.1f (bits) and %.1f (registers)", tc.ports, eb, eh)
		}
		if worst >= 50 || apart > 5 {
			t.Errorf("largest benign estimate %.1f, estimates apart by %.1f", worst, apart)
		}
	}
}

// TestConcurrentBitSpread: goroutines adding at once leave exactly the
// bits of the same items added in sequence.
func TestConcurrentBitSpread(t *testing.T) {
	const g, n = 4, 50_000
	s, seq := mustBits(t, 64, 2, 64, 3), mustBits(t, 64, 2, 64, 3)
	var wg sync.WaitGroup
	for i := range g {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 2))
			for range n {
				s.Add(r.Uint64N(1000), r.Uint64())
			}
		})
	}
	wg.Wait()
	for i := range g {
		r := rand.New(rand.NewPCG(uint64(i), 2))
		for range n {
			seq.Add(r.Uint64N(1000), r.Uint64())
		}
	}
	for i := range s.words {
		if s.words[i].Load() != seq.words[i].Load() {
			t.Fatalf("word %d: concurrent %#x, sequential %#x", i, s.words[i].Load(), seq.words[i].Load())
		}
	}
}
