package cms

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func mustNew(tb testing.TB, o Options) *Sketch {
	tb.Helper()
	s, err := NewWithOptions(o)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		name        string
		o           Options
		w, d        int
		errContains string
	}{
		{"paper figures", Options{Epsilon: 0.001, Delta: 0.01}, 2719, 5, ""},
		{"coarse", Options{Epsilon: 0.5, Delta: 0.5}, 6, 1, ""},
		{"delta just below 1", Options{Epsilon: 0.1, Delta: 0.99}, 28, 1, ""},
		{"explicit shape", Options{Width: 1000, Depth: 4}, 1000, 4, ""},
		{"explicit wins", Options{Epsilon: 0.1, Delta: 0.1, Width: 7, Depth: 2}, 7, 2, ""},
		{"zero", Options{}, 0, 0, "epsilon 0 must be in (0, 1)"},
		{"epsilon 1", Options{Epsilon: 1, Delta: 0.1}, 0, 0, "epsilon 1 must be in (0, 1)"},
		{"delta NaN", Options{Epsilon: 0.1, Delta: math.NaN()}, 0, 0, "delta NaN must be in (0, 1)"},
		{"tiny delta", Options{Epsilon: 0.1, Delta: 1e-20}, 0, 0, "needs 47 rows, more than 32"},
		{"tiny epsilon", Options{Epsilon: 1e-9, Delta: 0.01}, 0, 0, "need 2.718281829e+09×5 counters"},
		{"width alone", Options{Width: 10}, 0, 0, "width 10 and depth 0 must be set together"},
		{"depth 33", Options{Width: 10, Depth: 33}, 0, 0, "depth 33 must be in [1, 32]"},
		{"negative width", Options{Width: -1, Depth: 3}, 0, 0, "width -1 must be in [1,"},
		{"too many cells", Options{Width: 1 << 30, Depth: 4}, 0, 0, "width 1073741824 times depth 4 must be at most 2147483648 counters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, d, err := tc.o.Shape()
			if tc.errContains == "" {
				if err != nil || w != tc.w || d != tc.d {
					t.Fatalf("Shape = %d, %d, %v; want %d, %d", w, d, err, tc.w, tc.d)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.errContains) || !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("Shape error %v; want one containing %q wrapping ErrInvalidOptions", err, tc.errContains)
			}
			if _, err := NewWithOptions(tc.o); !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("NewWithOptions error %v", err)
			}
		})
	}
}

func TestAccessors(t *testing.T) {
	s, err := New(0.001, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if s.Width() != 2719 || s.Depth() != 5 || s.Bytes() != 4*2719*5+1024 || s.Seed() != 0 {
		t.Fatalf("width %d depth %d bytes %d seed %d", s.Width(), s.Depth(), s.Bytes(), s.Seed())
	}
	if s.Epsilon() > 0.001 || s.Delta() > 0.01 {
		t.Fatalf("epsilon %g delta %g above the request", s.Epsilon(), s.Delta())
	}
	if _, err := NewSize(0, 0); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("NewSize(0, 0): %v", err)
	}
}

// refCU is the sequential conservative update written plainly, on the
// sketch's own indexes: the exact reference for a single goroutine.
type refCU struct {
	s     *Sketch
	cells []uint64
}

func (r *refCU) add(h uint64, n uint32) (before, after uint32) {
	var idx [MaxDepth]uint64
	r.s.index(h, &idx)
	m := uint64(math.MaxUint64)
	for _, i := range idx[:r.s.depth] {
		m = min(m, r.cells[i])
	}
	t := min(m+uint64(n), math.MaxUint32)
	for _, i := range idx[:r.s.depth] {
		r.cells[i] = max(r.cells[i], t)
	}
	return uint32(m), uint32(t)
}

// plainCM is count-min without the conservative update, on the same
// indexes.
type plainCM struct {
	s     *Sketch
	cells []uint64
}

func (p *plainCM) add(h uint64, n uint32) {
	var idx [MaxDepth]uint64
	p.s.index(h, &idx)
	for _, i := range idx[:p.s.depth] {
		p.cells[i] += uint64(n)
	}
}

func (p *plainCM) estimate(h uint64) uint64 {
	var idx [MaxDepth]uint64
	p.s.index(h, &idx)
	m := uint64(math.MaxUint64)
	for _, i := range idx[:p.s.depth] {
		m = min(m, p.cells[i])
	}
	return m
}

// TestMatchesReference: one goroutine's Adds give the reference's
// before/after and leave every counter equal to the reference's.
func TestMatchesReference(t *testing.T) {
	s := mustNew(t, Options{Width: 64, Depth: 4, Seed: 7})
	ref := &refCU{s: s, cells: make([]uint64, len(s.cells))}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 200_000 {
		h := r.Uint64N(500) * 0x9e3779b97f4a7c15
		n := uint32(r.IntN(4))
		if i%50_000 == 7 {
			n = math.MaxUint32 / 3 // reach saturation on the way
		}
		b, a := s.Add(h, n)
		rb, ra := ref.add(h, n)
		if b != rb || a != ra {
			t.Fatalf("add %d: Add = (%d, %d), reference (%d, %d)", i, b, a, rb, ra)
		}
		if e := s.Estimate(h); e != a {
			t.Fatalf("add %d: Estimate %d after Add returned %d", i, e, a)
		}
	}
	for i := range s.cells {
		if uint64(s.cells[i].Load()) != ref.cells[i] {
			t.Fatalf("cell %d: %d, reference %d", i, s.cells[i].Load(), ref.cells[i])
		}
	}
}

func TestSaturation(t *testing.T) {
	s := mustNew(t, Options{Width: 16, Depth: 3})
	if b, a := s.Add(1, math.MaxUint32-2); b != 0 || a != math.MaxUint32-2 {
		t.Fatalf("first Add = (%d, %d)", b, a)
	}
	if b, a := s.Add(1, 5); b != math.MaxUint32-2 || a != math.MaxUint32 {
		t.Fatalf("saturating Add = (%d, %d)", b, a)
	}
	if b, a := s.Add(1, 1); b != math.MaxUint32 || a != math.MaxUint32 {
		t.Fatalf("saturated Add = (%d, %d)", b, a)
	}
	if s.Estimate(1) != math.MaxUint32 || s.Total() != math.MaxUint32-2+5+1 {
		t.Fatalf("Estimate %d Total %d", s.Estimate(1), s.Total())
	}
	if b, a := s.Add(2, 0); b != a {
		t.Fatalf("Add of 0 = (%d, %d)", b, a)
	}
	s.Reset()
	if s.Estimate(1) != 0 || s.Total() != 0 {
		t.Fatalf("after Reset: Estimate %d Total %d", s.Estimate(1), s.Total())
	}
}

// stream is a named key stream for the accuracy tests.
type stream struct {
	name string
	next func() uint64
}

func streams(seed uint64, keys uint64) []stream {
	ru := rand.New(rand.NewPCG(seed, 1))
	rz := rand.New(rand.NewPCG(seed, 2))
	z := rand.NewZipf(rz, 1.1, 1, keys-1)
	key := func(i uint64) uint64 { return i*0x9e3779b97f4a7c15 + 12345 }
	return []stream{
		{"uniform", func() uint64 { return key(ru.Uint64N(keys)) }},
		{"zipf1.1", func() uint64 { return key(z.Uint64()) }},
	}
}

// TestAccuracy compares the sketch with an exact map on uniform and Zipf
// streams: it never under-estimates, the keys whose error passes ε·N are
// at most a fraction δ (with a binomial margin), and the conservative
// update is never worse than plain count-min on any key. A quarter of
// the stream under the race detector.
func TestAccuracy(t *testing.T) {
	updates := 1_000_000
	if raceEnabled {
		updates /= 4
	}
	for _, cfg := range []struct{ eps, delta float64 }{{0.001, 0.01}, {0.0002, 0.05}} {
		for _, st := range streams(3, 100_000) {
			t.Run(fmt.Sprintf("eps=%g/%s", cfg.eps, st.name), func(t *testing.T) {
				s := mustNew(t, Options{Epsilon: cfg.eps, Delta: cfg.delta, Seed: 11})
				cm := &plainCM{s: s, cells: make([]uint64, len(s.cells))}
				exact := map[uint64]uint64{}
				r := rand.New(rand.NewPCG(5, 6))
				for range updates {
					h, n := st.next(), uint32(1+r.IntN(3))
					s.Add(h, n)
					cm.add(h, n)
					exact[h] += uint64(n)
				}
				N := s.Total()
				var sum uint64
				for _, c := range exact {
					sum += c
				}
				if N != sum {
					t.Fatalf("Total %d, exact %d", N, sum)
				}
				bound := cfg.eps * float64(N)
				var over, overCM, worse int
				var errSum, errSumCM, errMax float64
				for h, c := range exact {
					e, ecm := uint64(s.Estimate(h)), cm.estimate(h)
					if e < c {
						t.Fatalf("key %#x: estimate %d below true %d", h, e, c)
					}
					if e > ecm {
						worse++
					}
					err, errCM := float64(e-c), float64(ecm-c)
					errSum += err
					errSumCM += errCM
					errMax = max(errMax, err)
					if err > bound {
						over++
					}
					if errCM > bound {
						overCM++
					}
				}
				k := float64(len(exact))
				limit := cfg.delta*k + 4*math.Sqrt(cfg.delta*k) + 1
				t.Logf("ε=%g δ=%g w=%d d=%d: %d keys, N=%d, ε·N=%.0f; CU mean error %.2f max %.0f, over ε·N %d; plain CM mean error %.2f, over ε·N %d (limit %.0f)",
					cfg.eps, cfg.delta, s.Width(), s.Depth(), len(exact), N, bound, errSum/k, errMax, over, errSumCM/k, overCM, limit)
				if float64(over) > limit || float64(overCM) > limit {
					t.Errorf("keys over ε·N: CU %d, plain %d; want at most %.0f", over, overCM, limit)
				}
				if worse > 0 {
					t.Errorf("%d keys estimated higher by the conservative update than by plain count-min", worse)
				}
				if errSum > errSumCM {
					t.Errorf("conservative update's total error %.0f above plain count-min's %.0f", errSum, errSumCM)
				}
			})
		}
	}
}

// TestTightBound puts the bound to work: a narrow sketch under uniform
// keys, where plain count-min's row errors sit near N/w and the tail
// beyond ε·N = e·N/w is what δ bounds. Measured with plain count-min (the
// bound's own setting) and the conservative update.
func TestTightBound(t *testing.T) {
	const keys, updates = 20_000, 400_000
	for _, d := range []int{1, 2, 3} {
		s := mustNew(t, Options{Width: 50, Depth: d, Seed: 3})
		cm := &plainCM{s: s, cells: make([]uint64, len(s.cells))}
		exact := make([]uint64, keys)
		r := rand.New(rand.NewPCG(8, uint64(d)))
		// Skewed counts: a few keys carry most of N, as in traffic.
		z := rand.NewZipf(r, 1.3, 1, keys-1)
		for range updates {
			k := z.Uint64()
			s.Add(k, 1)
			cm.add(k, 1)
			exact[k]++
		}
		bound := s.Epsilon() * float64(s.Total())
		var seen, over, overCM int
		for k, c := range exact {
			if c == 0 {
				continue
			}
			seen++
			if float64(uint64(s.Estimate(uint64(k)))-c) > bound {
				over++
			}
			if float64(cm.estimate(uint64(k))-c) > bound {
				overCM++
			}
		}
		frac, fracCM := float64(over)/float64(seen), float64(overCM)/float64(seen)
		t.Logf("w=50 d=%d: δ=e^-d=%.3f; keys over ε·N: CU %.4f, plain %.4f", d, s.Delta(), frac, fracCM)
		margin := 4 * math.Sqrt(s.Delta()/float64(seen))
		if fracCM > s.Delta()+margin || frac > fracCM {
			t.Errorf("d=%d: fractions over ε·N CU %.4f plain %.4f; want plain <= %.4f and CU <= plain", d, frac, fracCM, s.Delta()+margin)
		}
	}
}

// TestColumnSpread: a chi-square test of the counters one row gives to
// consecutive keys (the sketch's keys are often structured hashes).
func TestColumnSpread(t *testing.T) {
	const w, n = 1024, 1 << 20
	s := mustNew(t, Options{Width: w, Depth: 3})
	counts := make([][]float64, 3)
	for r := range counts {
		counts[r] = make([]float64, w)
	}
	var idx [MaxDepth]uint64
	for k := range uint64(n) {
		s.index(k, &idx)
		for r := range 3 {
			counts[r][idx[r]-uint64(r)*w]++
		}
	}
	// 1023 degrees of freedom: mean 1023, sd 45; 1023 + 5 sd.
	for r := range 3 {
		var chi float64
		for _, c := range counts[r] {
			d := c - n/w
			chi += d * d / (n / w)
		}
		if chi > 1250 {
			t.Errorf("row %d: chi-square %.0f over 1023 degrees of freedom", r, chi)
		}
	}
	// Rows are independent: two keys that share row 0 share row 1 about
	// 1/w of the time.
	var both, first int
	prev := map[uint64]uint64{}
	for k := range uint64(200_000) {
		s.index(k, &idx)
		c0, c1 := idx[0], idx[1]
		if p, ok := prev[c0]; ok {
			first++
			if p == c1 {
				both++
			}
		}
		prev[c0] = c1
	}
	if exp := float64(first) / w; float64(both) > exp+5*math.Sqrt(exp)+3 {
		t.Errorf("keys sharing row 0 shared row 1 %d times of %d, expected about %.0f", both, first, exp)
	}
}
