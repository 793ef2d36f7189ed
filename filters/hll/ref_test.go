package hll

import (
	"math"
	"sync/atomic"
)

// This file holds the plain references the tests compare with: registers
// as a []uint8, Ertl's estimator in floating point from the register
// histogram (with τ), and Flajolet et al.'s estimator with linear
// counting, for comparison.

// refRegisters returns the registers of the items, computed plainly.
func refRegisters(p uint, items []uint64) []uint8 {
	r := make([]uint8, 1<<p)
	for _, it := range items {
		j, rank := register(it, p)
		r[j] = max(r[j], rank)
	}
	return r
}

// unpack returns the registers held in words.
func unpack(words []atomic.Uint64) []uint8 {
	r := make([]uint8, 8*len(words))
	for i := range words {
		w := words[i].Load()
		for b := range 8 {
			r[8*i+b] = uint8(w >> (8 * b))
		}
	}
	return r
}

// pack stores registers into words.
func pack(words []atomic.Uint64, regs []uint8) {
	for i := range words {
		var w uint64
		for b := range 8 {
			w |= uint64(regs[8*i+b]) << (8 * b)
		}
		words[i].Store(w)
	}
}

func histogram(p uint, regs []uint8) []float64 {
	c := make([]float64, 64-p+2)
	for _, r := range regs {
		c[r]++
	}
	return c
}

// ertlRef is Ertl's Algorithm 6 as published, in floating point.
func ertlRef(p uint, regs []uint8) float64 {
	m, q := float64(len(regs)), int(64-p)
	c := histogram(p, regs)
	if c[0] == m {
		return 0
	}
	z := m * tauRef(1-c[q+1]/m)
	for k := q; k >= 1; k-- {
		z = 0.5 * (z + c[k])
	}
	z += m * sigma(c[0]/m)
	return m * m / (2 * math.Ln2) / z
}

func tauRef(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		prev := z
		y *= 0.5
		z -= (1 - x) * (1 - x) * y
		if z == prev {
			return z / 3
		}
	}
}

// flajoletRef is the estimator of Flajolet et al. (Figure 3) for 64-bit
// hashes: the raw estimate, or linear counting below 2.5m when a register
// is zero.
func flajoletRef(regs []uint8) float64 {
	m := float64(len(regs))
	var alpha float64
	switch len(regs) {
	case 16:
		alpha = 0.673
	case 32:
		alpha = 0.697
	case 64:
		alpha = 0.709
	default:
		alpha = 0.7213 / (1 + 1.079/m)
	}
	var s, v float64
	for _, r := range regs {
		s += math.Ldexp(1, -int(r))
		if r == 0 {
			v++
		}
	}
	e := alpha * m * m / s
	if e <= 2.5*m && v > 0 {
		return m * math.Log(m/v)
	}
	return e
}
