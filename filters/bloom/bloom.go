package bloom

import (
	"errors"
	"fmt"
	"github.com/flowmon/flowmon/internal/hashmix"
	"math/bits"

	"github.com/zeebo/xxh3"
)

// Seed is the XXH3 seed of AddBytes and TestBytes. It equals
// capture.HashSeed, so a key hashed here and in the capture package agree.
const Seed uint64 = 0x666c6f776d6f6e31

// HashBytes hashes b with XXH3-64 and Seed.
func HashBytes(b []byte) uint64 { return xxh3.HashSeed(b, Seed) }

// Limits on a filter's shape.
const (
	MaxHashes = 32
	MaxBits   = 1 << 40 // 128 GiB of bits: a bound that catches nonsense sizes
	BlockBits = 512     // bits per block of a blocked filter (one cache line)
	blockWrds = BlockBits / 64
)

// Sentinel errors.
var (
	// ErrIncompatible is returned (wrapped) by Merge for filters of different shapes.
	ErrIncompatible = errors.New("incompatible filters")
	// ErrInvalidOptions is returned (wrapped) by Options.Validate.
	ErrInvalidOptions = errors.New("invalid options")
	// ErrFormat is returned (wrapped) by UnmarshalBinary for malformed input.
	ErrFormat = errors.New("malformed bloom filter encoding")
)

// Filter is a standard or cache-blocked Bloom filter. See the package doc.
// The zero value is not usable; build one with New, NewBlocked or
// NewWithOptions. Not safe for concurrent use.
type Filter struct {
	words   []uint64
	m       uint64 // bits
	blocks  uint64 // m / BlockBits when blocked
	k       uint32
	blocked bool
	count   uint64
}

// LCG constants (Knuth's MMIX); the top bits of this generator are well mixed.
const (
	lcgMul = 6364136223846793005
	lcgAdd = 1442695040888963407
)

// Add inserts the element with hash h.
func (f *Filter) Add(h uint64) {
	f.TestAndAdd(h)
}

// Test reports whether the element with hash h may be in the filter: false
// means certainly absent.
//
// A blocked filter's Test stops at the first clear bit, which for an absent
// element comes after one or two of the k; a Probe would compute all k
// first. Where several filters share the element, or it is inserted, a
// Probe (TestProbe, TestAndAdd) is the cheaper path.
func (f *Filter) Test(h uint64) bool {
	if f.blocked {
		blk := f.words[f.blockOff(h):][:blockWrds]
		y := hashmix.Mix(h ^ lcgAdd)
		for i := uint32(0); i < f.k; i++ {
			p := y >> (64 - 9)
			if blk[p>>6]&(1<<(p&63)) == 0 {
				return false
			}
			y = y*lcgMul + lcgAdd
		}
		return true
	}
	x, d := hashmix.Mix(h), hashmix.Mix(h^lcgAdd)|1
	for i := uint32(0); i < f.k; i++ {
		p := hashmix.Reduce(x, f.m)
		if f.words[p>>6]&(1<<(p&63)) == 0 {
			return false
		}
		x += d
		d += uint64(i)
	}
	return true
}

// TestAndAdd inserts the element with hash h and reports whether it was
// (possibly) present before. Count grows only when it was absent. A blocked
// filter goes through a Probe: the k bits as one mask, set with eight ORs.
func (f *Filter) TestAndAdd(h uint64) bool {
	if f.blocked {
		var p Probe
		f.SetProbe(&p, h)
		return f.TestAndAddProbe(&p)
	}
	present := true
	x, d := hashmix.Mix(h), hashmix.Mix(h^lcgAdd)|1
	for i := uint32(0); i < f.k; i++ {
		p := hashmix.Reduce(x, f.m)
		w, b := &f.words[p>>6], uint64(1)<<(p&63)
		present = present && *w&b != 0
		*w |= b
		x += d
		d += uint64(i)
	}
	if !present {
		f.count++
	}
	return present
}

// AddBytes inserts b, hashed with HashBytes.
func (f *Filter) AddBytes(b []byte) { f.Add(HashBytes(b)) }

// TestBytes reports whether b, hashed with HashBytes, may be in the filter.
func (f *Filter) TestBytes(b []byte) bool { return f.Test(HashBytes(b)) }

// Reset empties the filter, keeping its shape and memory.
func (f *Filter) Reset() {
	clear(f.words)
	f.count = 0
}

// Count is the number of additions that set at least one bit: the distinct
// elements added, less the ones that were false positives when added.
func (f *Filter) Count() uint64 { return f.count }

// Bits is m, the number of bits.
func (f *Filter) Bits() uint64 { return f.m }

// Hashes is k, the number of hash functions.
func (f *Filter) Hashes() int { return int(f.k) }

// Blocked reports whether f is cache-blocked.
func (f *Filter) Blocked() bool { return f.blocked }

// MemoryBytes is the memory held by the bit array.
func (f *Filter) MemoryBytes() uint64 { return uint64(len(f.words)) * 8 }

// FillRatio is the fraction of bits set.
func (f *Filter) FillRatio() float64 {
	var c int
	for _, w := range f.words {
		c += bits.OnesCount64(w)
	}
	return float64(c) / float64(f.m)
}

// EstimatedFPRate is the analytic false-positive rate of f's shape after n
// distinct insertions (see the package doc).
func (f *Filter) EstimatedFPRate(n uint64) float64 {
	if f.blocked {
		return BlockedFPRate(f.m, int(f.k), n)
	}
	return FPRate(f.m, int(f.k), n)
}

// Merge ORs o into f (set union). Both must have the same m, k and layout;
// otherwise Merge returns an error wrapping ErrIncompatible and leaves f
// unchanged. Count becomes the sum of both counts (an upper bound on the
// distinct elements of the union).
func (f *Filter) Merge(o *Filter) error {
	if f.m != o.m || f.k != o.k || f.blocked != o.blocked {
		return fmt.Errorf("merge bloom filter (m=%d k=%d blocked=%t) with (m=%d k=%d blocked=%t): %w",
			f.m, f.k, f.blocked, o.m, o.k, o.blocked, ErrIncompatible)
	}
	for i, w := range o.words {
		f.words[i] |= w
	}
	f.count += o.count
	return nil
}

// Equal reports whether f and o have the same shape and bits.
func (f *Filter) Equal(o *Filter) bool {
	if f.m != o.m || f.k != o.k || f.blocked != o.blocked || f.count != o.count {
		return false
	}
	for i, w := range f.words {
		if o.words[i] != w {
			return false
		}
	}
	return true
}
