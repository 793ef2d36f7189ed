package ccf

import (
	"errors"
	"fmt"
	"math"
)

// Sentinel errors. Every error returned by this package wraps one of them.
var (
	// ErrInvalidOptions reports an Options value that Validate rejects.
	ErrInvalidOptions = errors.New("ccf: invalid options")
	// ErrFull reports an insertion refused because every level, and the
	// stash, is full and no further level may be added. The filter is
	// unchanged: no resident was evicted.
	ErrFull = errors.New("ccf: filter full")
	// ErrIncompatible reports two filters of different shapes given to an
	// operation that needs the same shape (Decode).
	ErrIncompatible = errors.New("ccf: incompatible filters")
	// ErrCorrupt reports bytes that UnmarshalBinary cannot accept.
	ErrCorrupt = errors.New("ccf: corrupt encoding")
)

// Limits on the parameters.
const (
	MinFingerprintBits = 4
	MaxFingerprintBits = 60
	MaxCounterBits     = 32
	MaxBucketSize      = 16
	MaxStashSize       = 64
	// MaxKicksLimit bounds Options.MaxKicks, so that one insertion (into
	// a filter decoded from a peer's bytes, say) costs at most about a
	// second. It is the occupancy evaluation's largest kick bound, the
	// bucket count 2^24.
	MaxKicksLimit = 1 << 24
	MaxLevels     = 16
	// MaxBuckets bounds the buckets of level 0 (and so the memory a
	// constructor or a decoder may allocate: 2^32 buckets).
	MaxBuckets = 1 << 32
)

// Defaults used by Options.withDefaults for zero fields.
const (
	DefaultBucketSize  = 4
	DefaultCounterBits = 16
	DefaultStashSize   = 4
	DefaultMaxKicks    = 500
	DefaultLoad        = 0.95
	DefaultFPRate      = 0.001
)

// Options sizes a Filter from the figures a user knows. Zero fields take
// the defaults above.
type Options struct {
	// Capacity is the number of distinct elements expected (flows per
	// window). Level 0 gets ceil(Capacity / (BucketSize*Load)) buckets.
	Capacity uint64
	// FPRate is the target probability that Count of an absent element is
	// not zero. The fingerprint gets f = ceil(log2(2*BucketSize/FPRate))
	// bits (Fan et al.'s bound ε <= 2b/2^f, the paper's Eq. 6-8).
	// Ignored when FingerprintBits is set.
	FPRate float64
	// FingerprintBits sets f directly (MinFingerprintBits..MaxFingerprintBits).
	FingerprintBits int
	// CounterBits is c, the width of each slot's multiplicity counter
	// (1..MaxCounterBits, f+c <= 64). A counter that would pass 2^c-1
	// saturates: see the package doc.
	CounterBits int
	// BucketSize is b, the slots per bucket (1..MaxBucketSize).
	BucketSize int
	// Load is the target occupancy used to size level 0 (0 < Load <= 1).
	Load float64
	// Buckets sets the number of level-0 buckets directly, overriding
	// Capacity and Load.
	Buckets uint64
	// MaxKicks bounds the cuckoo relocations of one insertion before the
	// last victim is put in the stash.
	MaxKicks int
	// StashSize is the number of victims each level can hold outside its
	// buckets (1..MaxStashSize).
	StashSize int
	// MaxLevels bounds growth: when level k is full (stash included) an
	// insertion opens level k+1 with twice the buckets, up to MaxLevels
	// levels. 1 (the default) means fixed memory: a full filter returns
	// ErrFull.
	MaxLevels int
	// Seed perturbs the hash; two filters compared with each other must
	// share it.
	Seed uint64
}

func (o Options) withDefaults() Options {
	if o.BucketSize == 0 {
		o.BucketSize = DefaultBucketSize
	}
	if o.CounterBits == 0 {
		o.CounterBits = DefaultCounterBits
	}
	if o.StashSize == 0 {
		o.StashSize = DefaultStashSize
	}
	if o.MaxKicks == 0 {
		o.MaxKicks = DefaultMaxKicks
	}
	if o.Load == 0 {
		o.Load = DefaultLoad
	}
	if o.MaxLevels == 0 {
		o.MaxLevels = 1
	}
	if o.FingerprintBits == 0 {
		if o.FPRate == 0 {
			o.FPRate = DefaultFPRate
		}
		if o.FPRate > 0 && o.FPRate < 1 {
			o.FingerprintBits = FingerprintBitsFor(o.FPRate, o.BucketSize)
		}
	}
	return o
}

// FingerprintBitsFor returns the fingerprint length that keeps the false
// positive rate of a lookup under fpRate with buckets of b slots:
// f = ceil(log2(2b/fpRate)), at least MinFingerprintBits.
func FingerprintBitsFor(fpRate float64, b int) int {
	f := int(math.Ceil(math.Log2(2 * float64(b) / fpRate)))
	if f < MinFingerprintBits {
		f = MinFingerprintBits
	}
	return f
}

// Validate reports every problem with o (after defaults), joined.
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, a...)...))
	}
	if o.Buckets == 0 && o.Capacity == 0 {
		bad("capacity must be > 0 (or buckets set)")
	}
	if o.FPRate < 0 || o.FPRate >= 1 || math.IsNaN(o.FPRate) {
		bad("false-positive rate %v must be in (0, 1)", o.FPRate)
	}
	if o.FingerprintBits < MinFingerprintBits || o.FingerprintBits > MaxFingerprintBits {
		bad("fingerprint bits %d must be in [%d, %d]", o.FingerprintBits, MinFingerprintBits, MaxFingerprintBits)
	}
	if o.CounterBits < 1 || o.CounterBits > MaxCounterBits {
		bad("counter bits %d must be in [1, %d]", o.CounterBits, MaxCounterBits)
	}
	if o.FingerprintBits+o.CounterBits > 64 {
		bad("fingerprint bits %d + counter bits %d must be <= 64", o.FingerprintBits, o.CounterBits)
	}
	if o.BucketSize < 1 || o.BucketSize > MaxBucketSize {
		bad("bucket size %d must be in [1, %d]", o.BucketSize, MaxBucketSize)
	}
	if !(o.Load > 0 && o.Load <= 1) {
		bad("load %v must be in (0, 1]", o.Load)
	}
	if o.MaxKicks < 0 || o.MaxKicks > MaxKicksLimit {
		bad("max kicks %d must be in [0, %d]", o.MaxKicks, MaxKicksLimit)
	}
	if o.StashSize < 1 || o.StashSize > MaxStashSize {
		bad("stash size %d must be in [1, %d]", o.StashSize, MaxStashSize)
	}
	if o.MaxLevels < 1 || o.MaxLevels > MaxLevels {
		bad("max levels %d must be in [1, %d]", o.MaxLevels, MaxLevels)
	}
	if len(errs) == 0 {
		if m := o.buckets(); m == 0 || m > MaxBuckets {
			bad("%d buckets must be in [1, %d]", m, uint64(MaxBuckets))
		} else if m<<(o.MaxLevels-1) > MaxBuckets<<4 {
			bad("%d buckets grown over %d levels is too large", m, o.MaxLevels)
		}
	}
	return errors.Join(errs...)
}

// buckets returns the number of level-0 buckets o asks for.
func (o Options) buckets() uint64 {
	if o.Buckets != 0 {
		return o.Buckets
	}
	m := math.Ceil(float64(o.Capacity) / (float64(o.BucketSize) * o.Load))
	if m > MaxBuckets+1 {
		return MaxBuckets + 1
	}
	if m < 1 {
		m = 1
	}
	return uint64(m)
}
