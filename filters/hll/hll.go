package hll

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
)

// Limits on precision: an HLL has 2^p registers.
const (
	MinPrecision = 4  // 16 registers (α_16 is the smallest α of the paper)
	MaxPrecision = 18 // 256 KiB of registers, a standard error of 0.2%
)

// Sentinel errors.
var (
	// ErrInvalidOptions is returned (wrapped) by the constructors and
	// SpreadOptions.Validate.
	ErrInvalidOptions = errors.New("invalid options")
	// ErrIncompatible is returned (wrapped) by Merge for sketches of
	// different shapes.
	ErrIncompatible = errors.New("incompatible sketches")
)

// HLL is a HyperLogLog sketch of 2^p one-byte registers: it estimates the
// number of distinct item hashes added. Safe for concurrent use without
// locks (see the package doc); Add and Estimate allocate nothing. Build
// one with New.
type HLL struct {
	words []atomic.Uint64 // 8 registers a word, register j in byte j%8 of word j/8
	sh    shape
}

// New returns an empty HLL of 2^precision registers, precision in
// [MinPrecision, MaxPrecision]; its standard error is 1.04/sqrt(2^precision).
func New(precision int) (*HLL, error) {
	if precision < MinPrecision || precision > MaxPrecision {
		return nil, fmt.Errorf("new hyperloglog: precision %d must be in [%d, %d]: %w",
			precision, MinPrecision, MaxPrecision, ErrInvalidOptions)
	}
	return &HLL{words: make([]atomic.Uint64, 1<<precision/8), sh: newShape(uint(precision))}, nil
}

// PrecisionFor is the smallest precision p whose standard error
// 1.04/sqrt(2^p) is at most relErr, and at least MinPrecision. It may
// pass MaxPrecision (New then refuses it).
func PrecisionFor(relErr float64) int {
	if !(relErr > 0) {
		return math.MaxInt
	}
	p := int(math.Ceil(math.Log2(1.04 * 1.04 / (relErr * relErr))))
	return max(p, MinPrecision)
}

// Add adds the item with hash itemHash and reports whether a register
// changed (if not, the estimate did not either).
func (h *HLL) Add(itemHash uint64) bool {
	idx, rank := register(itemHash, h.sh.p)
	return setMax(&h.words[idx>>3], uint(idx&7)*8, rank)
}

// Estimate returns the estimated number of distinct items added. It never
// decreases between Resets.
func (h *HLL) Estimate() float64 { return h.sh.estimate(h.words) }

// Merge adds o's items to h (the registers' maximum): h then estimates
// the union. Both must have the same precision; otherwise Merge returns
// an error wrapping ErrIncompatible and leaves h unchanged. o may be
// added to while it is merged: h gets some of those items.
func (h *HLL) Merge(o *HLL) error {
	if h.sh.p != o.sh.p {
		return fmt.Errorf("merge hyperloglog of precision %d with one of precision %d: %w", h.sh.p, o.sh.p, ErrIncompatible)
	}
	mergeWords(h.words, o.words)
	return nil
}

// Reset zeroes every register with atomic stores; Adds running meanwhile
// may be kept or lost.
func (h *HLL) Reset() { clearWords(h.words) }

// Precision is p.
func (h *HLL) Precision() int { return int(h.sh.p) }

// StdError is the relative standard error 1.04/sqrt(m).
func (h *HLL) StdError() float64 { return 1.04 / math.Sqrt(h.sh.m) }

// Bytes is the memory of the registers: 2^p bytes.
func (h *HLL) Bytes() int { return 8 * len(h.words) }
