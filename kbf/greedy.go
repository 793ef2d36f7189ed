package kbf

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
)

// GreedyCodes runs the paper's Algorithm 1: starting from 1, each candidate
// is admitted when it differs from every admitted code and from every XOR of
// two admitted codes, and its XORs with the admitted codes hit neither. The
// set of admitted codes and pairwise XORs is kept in a bitmap over the code
// space, the exact form of the paper's "conventional Bloom filter" (a
// single identity hash, so no candidate is wrongly rejected): each candidate
// is accepted or rejected with O(j) constant-time probes. The search stops
// with an error when a code would need more than maxBits bits.
//
// It returns the codes in ascending order (their generation order) and the
// two bitmaps: codes, and XORs of two distinct codes (the paper's filter L).
func GreedyCodes(n, maxBits int) (codes []uint32, codeSet, pairSet bitset, err error) {
	if n < 1 || maxBits < 1 || maxBits > 32 {
		return nil, nil, nil, fmt.Errorf("%w: greedy search for %d codes in %d bits", ErrInvalidOptions, n, maxBits)
	}
	codes = make([]uint32, 0, n)
	width := 1 // current bitmap covers [0, 2^width)
	codeSet, pairSet = newBitset(2), newBitset(2)
	cand := uint64(1)
	for len(codes) < n {
		if b := bits.Len64(cand); b > width {
			if b > maxBits {
				return nil, nil, nil, fmt.Errorf("%w: greedy search found %d of %d codes within %d bits",
					ErrInvalidOptions, len(codes), n, maxBits)
			}
			width = b
			codeSet = append(codeSet, make(bitset, (uint64(1)<<b+63)/64-uint64(len(codeSet)))...)
			pairSet = append(pairSet, make(bitset, len(codeSet)-len(pairSet))...)
		}
		c := uint32(cand)
		cand++
		if codeSet.has(c) || pairSet.has(c) {
			continue
		}
		ok := true
		for _, v := range codes {
			x := c ^ v
			if codeSet.has(x) || pairSet.has(x) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		for _, v := range codes {
			pairSet.set(c ^ v)
		}
		codeSet.set(c)
		codes = append(codes, c)
	}
	return codes, codeSet, pairSet, nil
}

// GreedyBits is the number of bits the greedy search needs for n codes.
func GreedyBits(n int) (int, error) {
	codes, _, _, err := GreedyCodes(n, 32)
	if err != nil {
		return 0, err
	}
	return bits.Len32(codes[len(codes)-1]), nil
}

// MinCodeBits is the counting bound of Section III-C: the least P with
// 2^P >= n(n-1)/2 + n (distinct codes and pairwise XORs, all nonzero:
// 2^P - 1 >= ... is the strict form; the paper's form is used here).
func MinCodeBits(n int) int {
	need := float64(n)*float64(n-1)/2 + float64(n)
	return int(math.Ceil(math.Log2(need)))
}

// greedyEncoder holds the ascending code table (the reverse (encoding,
// value) table of Section III-H, value = index), the two bitmaps, and the
// quadratic regression of code against index.
type greedyEncoder struct {
	codes            []uint32
	codeSet, pairSet bitset
	width            int
	// code(i) ~ c0 + c1 i + c2 i^2; avg is the mean step between codes.
	c0, c1, c2, avg float64
}

func newGreedy(values, maxBits int) (*greedyEncoder, error) {
	codes, cs, ps, err := GreedyCodes(values, maxBits)
	if err != nil {
		return nil, err
	}
	g := &greedyEncoder{codes: codes, codeSet: cs, pairSet: ps, width: bits.Len32(codes[len(codes)-1])}
	g.fit()
	return g, nil
}

// fit solves the 3x3 normal equations of the least-squares quadratic.
func (g *greedyEncoder) fit() {
	n := len(g.codes)
	if n > 1 {
		g.avg = float64(g.codes[n-1]-g.codes[0]) / float64(n-1)
	}
	if n < 3 {
		g.c0, g.c1 = float64(g.codes[0]), g.avg
		return
	}
	var s [5]float64 // sums of i^0..i^4
	var t [3]float64 // sums of y i^0..i^2
	for i, c := range g.codes {
		x, y := float64(i), float64(c)
		p := 1.0
		for j := 0; j < 5; j++ {
			s[j] += p
			if j < 3 {
				t[j] += y * p
			}
			p *= x
		}
	}
	a := [3][4]float64{{s[0], s[1], s[2], t[0]}, {s[1], s[2], s[3], t[1]}, {s[2], s[3], s[4], t[2]}}
	for i := 0; i < 3; i++ {
		for r := i + 1; r < 3; r++ {
			f := a[r][i] / a[i][i]
			for c := i; c < 4; c++ {
				a[r][c] -= f * a[i][c]
			}
		}
	}
	var x [3]float64
	for i := 2; i >= 0; i-- {
		x[i] = a[i][3]
		for c := i + 1; c < 3; c++ {
			x[i] -= a[i][c] * x[c]
		}
		x[i] /= a[i][i]
	}
	g.c0, g.c1, g.c2 = x[0], x[1], x[2]
}

func (g *greedyEncoder) n() int    { return len(g.codes) }
func (g *greedyEncoder) bits() int { return g.width }

func (g *greedyEncoder) code(v uint32) uint32 { return g.codes[v] }

func (g *greedyEncoder) isCode(c uint32) bool { return g.codeSet.has(c) }
func (g *greedyEncoder) isPair(r uint32) bool { return g.pairSet.has(r) }

// pair scans the codes for a with a^r also a code: O(N), as in Section
// III-F.
func (g *greedyEncoder) pair(r uint32) (a, b uint32, ok bool) {
	if !g.pairSet.has(r) {
		return 0, 0, false
	}
	for _, a := range g.codes {
		if b := a ^ r; b > a && g.codeSet.has(b) {
			return a, b, true
		}
	}
	return 0, 0, false
}

func (g *greedyEncoder) value(c uint32) (uint32, bool) {
	if !g.codeSet.has(c) {
		return 0, false
	}
	i, _ := g.regressionIndex(c)
	return uint32(i), i >= 0
}

// regressionIndex finds the index of code c as in Section III-H: invert the
// quadratic fit, then walk by (difference / average step) until the code
// is found. It returns -1 when c is not in the table, and the number of
// table probes.
func (g *greedyEncoder) regressionIndex(c uint32) (idx, probes int) {
	n := len(g.codes)
	y := float64(c)
	var x float64
	if math.Abs(g.c2) > 1e-12 {
		d := g.c1*g.c1 - 4*g.c2*(g.c0-y)
		if d < 0 {
			d = 0
		}
		x = (-g.c1 + math.Sqrt(d)) / (2 * g.c2)
	} else if g.c1 != 0 {
		x = (y - g.c0) / g.c1
	}
	i := 0
	if x > 0 {
		i = int(math.Round(math.Min(x, float64(n-1))))
	}
	lo, hi := 0, n-1 // the answer lies in [lo, hi]
	slope := g.slope(i)
	prevI, prev := -1, 0.0
	for probes < 64 && lo <= hi {
		probes++
		got := g.codes[i]
		if got == c {
			return i, probes
		}
		if got < c {
			lo = i + 1
		} else {
			hi = i - 1
		}
		if lo > hi {
			break
		}
		// secant: the local step between the last two probes, after the
		// first probe the fit's slope.
		if prevI >= 0 && prevI != i {
			if s := (float64(got) - prev) / float64(i-prevI); s > 0 {
				slope = s
			}
		}
		prevI, prev = i, float64(got)
		step := int(math.Round((y - float64(got)) / slope))
		if step == 0 {
			if got < c {
				step = 1
			} else {
				step = -1
			}
		}
		i = min(max(i+step, lo), hi)
	}
	if lo > hi {
		return -1, probes
	}
	j := lo + sort.Search(hi-lo+1, func(k int) bool { return g.codes[lo+k] >= c })
	if j <= hi && g.codes[j] == c {
		return j, probes + bits.Len(uint(hi-lo+1))
	}
	return -1, probes
}

// slope is the step between codes near index i: the derivative of the
// fit, c1 + 2 c2 i, or the average step where the fit is flat. The paper
// walks by the global average step; near the ends of a curved table that
// takes tens of probes, the local slope takes two or three.
func (g *greedyEncoder) slope(i int) float64 {
	d := g.c1 + 2*g.c2*float64(i)
	if d < 1 {
		d = math.Max(g.avg, 1)
	}
	return d
}

// binaryIndex is the conventional binary search beside which the
// regression lookup is benchmarked.
func (g *greedyEncoder) binaryIndex(c uint32) (idx, probes int) {
	lo, hi := 0, len(g.codes)
	for lo < hi {
		probes++
		mid := int(uint(lo+hi) >> 1)
		if g.codes[mid] < c {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(g.codes) && g.codes[lo] == c {
		return lo, probes
	}
	return -1, probes
}
