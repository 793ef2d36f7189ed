package hll

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func mustSpread(tb testing.TB, o SpreadOptions) *Spread {
	tb.Helper()
	s, err := NewSpreadWithOptions(o)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func TestSpreadOptions(t *testing.T) {
	for _, tc := range []struct {
		name        string
		o           SpreadOptions
		w, d, p     int
		errContains string
	}{
		{"figures", SpreadOptions{RelErr: 0.13, Keys: 100_000, Delta: 0.02}, 100_000, 4, 6, ""},
		{"coarse error", SpreadOptions{RelErr: 0.5, Keys: 10, Delta: 0.5}, 10, 1, 4, ""},
		{"explicit", SpreadOptions{Width: 1000, Depth: 3, Precision: 7}, 1000, 3, 7, ""},
		{"explicit wins", SpreadOptions{RelErr: 0.1, Keys: 5, Delta: 0.1, Width: 9, Depth: 2, Precision: 5}, 9, 2, 5, ""},
		{"zero", SpreadOptions{}, 0, 0, 0, "keys 0 must be at least 1"},
		{"relerr", SpreadOptions{RelErr: 1.5, Keys: 10, Delta: 0.1}, 0, 0, 0, "relative error 1.5 must be in (0, 1)"},
		{"fine error", SpreadOptions{RelErr: 0.01, Keys: 10, Delta: 0.1}, 0, 0, 0, "cell precision 14 must be in [4, 12]"},
		{"delta", SpreadOptions{RelErr: 0.1, Keys: 10, Delta: 0}, 0, 0, 0, "delta 0 must be in (0, 1)"},
		{"tiny delta", SpreadOptions{RelErr: 0.1, Keys: 10, Delta: 1e-30}, 0, 0, 0, "depth 33 must be in [1, 32]"},
		{"partial shape", SpreadOptions{Width: 10, Depth: 2}, 0, 0, 0, "width 10, depth 2 and precision 0 must be set together"},
		{"precision 3", SpreadOptions{Width: 10, Depth: 2, Precision: 3}, 0, 0, 0, "cell precision 3 must be in [4, 12]"},
		{"huge", SpreadOptions{Width: 1 << 30, Depth: 8, Precision: 12}, 0, 0, 0, "need more than 17179869184 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, d, p, err := tc.o.Shape()
			if tc.errContains == "" {
				if err != nil || w != tc.w || d != tc.d || p != tc.p {
					t.Fatalf("Shape = %d, %d, %d, %v; want %d, %d, %d", w, d, p, err, tc.w, tc.d, tc.p)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.errContains) || !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("Shape error %v; want one containing %q wrapping ErrInvalidOptions", err, tc.errContains)
			}
			if tc.o.Validate() == nil {
				t.Fatal("Validate accepted what Shape refused")
			}
			if _, err := NewSpreadWithOptions(tc.o); !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("NewSpreadWithOptions error %v", err)
			}
		})
	}
	s, err := NewSpreadFor(0.13, 1000, 0.02)
	if err != nil {
		t.Fatal(err)
	}
	if s.Width() != 1000 || s.Depth() != 4 || s.Precision() != 6 || s.Bytes() != 1000*4*64 || s.Seed() != 0 {
		t.Fatalf("width %d depth %d precision %d bytes %d", s.Width(), s.Depth(), s.Precision(), s.Bytes())
	}
	if _, err := NewSpread(0, 1, 6); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("NewSpread(0, 1, 6): %v", err)
	}
}

// TestSpreadCells: every cell holds exactly the registers of the union of
// the items of the keys that map to it (the plain reference), and a key's
// estimate is the smallest of its cells' and at least its own HLL's.
func TestSpreadCells(t *testing.T) {
	s := mustSpread(t, SpreadOptions{Width: 50, Depth: 3, Precision: 5, Seed: 9})
	p := uint(5)
	cellItems := map[uint64][]uint64{} // first word of a cell -> items
	keyItems := map[uint64][]uint64{}
	r := rand.New(rand.NewPCG(6, 6))
	for range 20_000 {
		k, it := r.Uint64N(300), r.Uint64N(5000)
		s.Add(k, it)
		keyItems[k] = append(keyItems[k], it)
		var off [MaxDepth]uint64
		s.cells(k, &off)
		for _, o := range off[:s.depth] {
			cellItems[o] = append(cellItems[o], it)
		}
	}
	for o := uint64(0); o < uint64(len(s.words)); o += s.cellWords {
		want := refRegisters(p, cellItems[o])
		got := unpack(s.words[o : o+s.cellWords])
		for j := range want {
			if got[j] != want[j] {
				t.Fatalf("cell at word %d register %d: %d, reference %d", o, j, got[j], want[j])
			}
		}
	}
	own := mustHLL(t, 5)
	for k, items := range keyItems {
		own.Reset()
		for _, it := range items {
			own.Add(it)
		}
		var off [MaxDepth]uint64
		s.cells(k, &off)
		least := math.Inf(1)
		for _, o := range off[:s.depth] {
			least = min(least, ertlRef(p, refRegisters(p, cellItems[o])))
		}
		e := s.Estimate(k)
		if math.Abs(e-least) > 1e-9*least {
			t.Fatalf("key %d: estimate %g, smallest cell by the reference %g", k, e, least)
		}
		if e < own.Estimate() {
			t.Fatalf("key %d: estimate %g below its own HLL's %g", k, e, own.Estimate())
		}
	}
}

// TestSpreadScanner: one source scanning 1000 distinct ports among
// 100,000 sources touching 1 to 3 ports each, in a Spread from
// NewSpreadFor(0.13, 100_001, 0.02). The scanner's estimate is within the
// package doc's bound (at four standard errors: one sample), and every
// benign source stays far below it.
func TestSpreadScanner(t *testing.T) {
	const benign, ports = 100_000, 1000
	s, err := NewSpreadFor(0.13, benign+1, 0.02)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 7))
	port := func(p uint64) uint64 { return p*0x9e3779b97f4a7c15 ^ 0x5bd1e995 }
	src := func(i uint64) uint64 { return i*0xbf58476d1ce4e5b9 + 1 }
	const scanner = 0xdeadbeef
	truth := make([]int, benign)
	var d float64 = ports
	scanned := r.Perm(65536)[:ports]
	for i, p := range scanned {
		s.Add(scanner, port(uint64(p)))
		// The benign sources' packets between the scanner's.
		for k := i * benign / ports; k < (i+1)*benign/ports; k++ {
			n := 1 + r.IntN(3)
			seen := map[uint64]bool{}
			for range n {
				p := uint64(r.IntN(1024)) // well-known ports: sources share them
				s.Add(src(uint64(k)), port(p))
				seen[p] = true
			}
			truth[k] = len(seen)
			d += float64(len(seen))
		}
	}
	se, extra := s.StdError(), s.CollisionBound(d)
	e := s.Estimate(scanner)
	own := mustHLL(t, s.Precision())
	for _, p := range scanned {
		own.Add(port(uint64(p)))
	}
	t.Logf("scanner's own HLL of %d registers: %.1f (the cells can only add to it)", 1<<s.Precision(), own.Estimate())
	lo, hi := ports*(1-4*se), (ports+extra)*(1+4*se)
	t.Logf("scanner: %d ports, estimate %.1f (%+.1f%%); bound [%.0f, %.0f]: standard error %.3f, e·D/w = %.1f for D = %.0f; %d bytes",
		ports, e, 100*(e/ports-1), lo, hi, se, extra, d, s.Bytes())
	if e < lo || e > hi {
		t.Errorf("scanner estimate %.1f outside [%.0f, %.0f]", e, lo, hi)
	}
	var worst, sum float64
	over := 0
	for k := range benign {
		be := s.Estimate(src(uint64(k)))
		worst = max(worst, be)
		sum += be
		if be > (float64(truth[k])+extra)*(1+3*se) {
			over++
		}
	}
	t.Logf("benign: mean estimate %.2f (true mean %.2f), largest %.1f; %d over (n + e·D/w)(1+3σ)", sum/benign, (d-ports)/benign, worst, over)
	if worst >= 100 {
		t.Errorf("a benign source estimated at %.1f distinct ports", worst)
	}
	if limit := 0.02*benign + 4*math.Sqrt(0.02*benign); float64(over) > limit {
		t.Errorf("%d benign sources over their bound; want at most %.0f", over, limit)
	}
}

// TestSpreadMonotone adds items to keys one at a time in a crowded
// Spread: each key's estimate never decreases.
func TestSpreadMonotone(t *testing.T) {
	s := mustSpread(t, SpreadOptions{Width: 64, Depth: 4, Precision: 4})
	r := rand.New(rand.NewPCG(8, 8))
	last := map[uint64]float64{}
	n := 200_000
	if raceEnabled {
		n /= 10
	}
	for range n {
		k := r.Uint64N(500)
		s.Add(k, r.Uint64())
		e := s.Estimate(k)
		if e < last[k] {
			t.Fatalf("key %d: estimate went down from %g to %g", k, last[k], e)
		}
		last[k] = e
	}
}

func TestSpreadMergeReset(t *testing.T) {
	o := SpreadOptions{Width: 100, Depth: 3, Precision: 6, Seed: 1}
	a, b, u := mustSpread(t, o), mustSpread(t, o), mustSpread(t, o)
	r := rand.New(rand.NewPCG(9, 9))
	for range 10_000 {
		k1, i1, k2, i2 := r.Uint64N(500), r.Uint64(), r.Uint64N(500), r.Uint64()
		a.Add(k1, i1)
		b.Add(k2, i2)
		u.Add(k1, i1)
		u.Add(k2, i2)
	}
	if err := a.Merge(b); err != nil {
		t.Fatal(err)
	}
	for i := range a.words {
		if a.words[i].Load() != u.words[i].Load() {
			t.Fatalf("word %d: merged %#x, union %#x", i, a.words[i].Load(), u.words[i].Load())
		}
	}
	o.Seed = 2
	if err := a.Merge(mustSpread(t, o)); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("merge with another seed: %v", err)
	}
	a.Reset()
	for k := range uint64(500) {
		if e := a.Estimate(k); e != 0 {
			t.Fatalf("key %d: estimate %g after Reset", k, e)
		}
	}
}
