package scbf

import (
	"errors"
	"fmt"
	"math"

	"github.com/flowmon/flowmon/filters/bloom"
)

// Sentinel errors. Every error the package returns wraps one of them.
var (
	ErrInvalidOptions = errors.New("scbf: invalid options")
	ErrCorrupt        = errors.New("scbf: damaged file")
	ErrVersion        = errors.New("scbf: unsupported format version")
	ErrRebuild        = errors.New("scbf: file must be rebuilt")
	ErrLocked         = errors.New("scbf: file in use")
	ErrFull           = errors.New("scbf: no more sub-filters")
	ErrClosed         = errors.New("scbf: filter closed")
	ErrNotSupported   = errors.New("scbf: not supported on this platform")
)

// Tightening ratios (see the package doc).
const (
	// RatioCode is dablooms' ERROR_TIGHTENING_RATIO (src/dablooms.c).
	RatioCode = 0.5
	// RatioREADME is the r the dablooms README picks.
	RatioREADME = 0.9
	// DefaultRatio is the ratio of a zero Options.Ratio.
	DefaultRatio = RatioREADME
	// DefaultErrorRate is the overall rate of a zero Options.ErrorRate.
	DefaultErrorRate = 0.01
)

// Limits.
const (
	// MaxHashes bounds k: sub-filter rates floor at 2^-MaxHashes.
	MaxHashes = 256
	// MaxFilters bounds the number of sub-filters (Add returns ErrFull).
	MaxFilters = 4096
	// MaxCapacity bounds Options.Capacity.
	MaxCapacity = 1 << 32
)

// Seed is the XXH3 seed of HashBytes: the filters' one (bloom.Seed),
// which equals capture.HashSeed, so a key hashed here and in the capture
// package agree.
const Seed = bloom.Seed

// HashBytes is the key of Add, Remove and Check for something that is
// not already a flowmon hash: the filters' one byte hash, bloom.HashBytes.
func HashBytes(b []byte) uint64 { return bloom.HashBytes(b) }

// Options sizes a Filter.
type Options struct {
	// Capacity is the number of elements a sub-filter holds before the
	// filter scales (dablooms' capacity). Required.
	Capacity uint64
	// ErrorRate is the overall false-positive rate P the filter stays
	// under however many sub-filters it has; default 0.01.
	ErrorRate float64
	// Ratio is the tightening ratio r in (0, 1): sub-filter i is built
	// for P(1-r)r^i. Default DefaultRatio.
	Ratio float64
	// Seed is mixed into every key's probes (hashmix.Pair).
	Seed uint64
}

func (o Options) withDefaults() Options {
	if o.ErrorRate == 0 {
		o.ErrorRate = DefaultErrorRate
	}
	if o.Ratio == 0 {
		o.Ratio = DefaultRatio
	}
	return o
}

// Validate reports every problem with o (after defaults), joined.
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, a...)...))
	}
	if o.Capacity < 1 || o.Capacity > MaxCapacity {
		bad("capacity %d must be in [1, %d]", o.Capacity, uint64(MaxCapacity))
	}
	if !(o.ErrorRate > 0 && o.ErrorRate < 1) {
		bad("error rate %v must be in (0, 1)", o.ErrorRate)
	}
	if !(o.Ratio > 0 && o.Ratio < 1) {
		bad("tightening ratio %v must be in (0, 1)", o.Ratio)
	}
	return errors.Join(errs...)
}

// SubfilterRate is the target false-positive rate of sub-filter i (from
// 0): P(1-r)r^i, floored at 2^-MaxHashes.
func (o Options) SubfilterRate(i int) float64 {
	return math.Exp(-o.lnInvRate(i))
}

// lnInvRate is ln(1/p_i), computed in logs so that deep sub-filters do not
// underflow.
func (o Options) lnInvRate(i int) float64 {
	o = o.withDefaults()
	l := -math.Log(o.ErrorRate) - math.Log1p(-o.Ratio) - float64(i)*math.Log(o.Ratio)
	return min(l, MaxHashes*math.Ln2)
}

// shape returns the hashes k and the counters per partition cpf of
// sub-filter i: dablooms' counting_bloom_init, with cpf grown until the
// rate at Capacity elements meets the target.
func (o Options) shape(i int) (k int, cpf uint64) {
	l := o.lnInvRate(i)
	k = min(max(int(math.Ceil(l/math.Ln2)), 1), MaxHashes)
	c := math.Ceil(float64(o.Capacity) * l / (float64(k) * math.Ln2 * math.Ln2))
	c = max(c, 1)
	for rate(k, uint64(c), o.Capacity) > math.Exp(-l) {
		c += math.Ceil(c / 1000)
	}
	return k, uint64(c)
}

// rate is the false-positive rate of a partitioned filter with k
// partitions of cpf counters holding n elements: (1 - (1 - 1/cpf)^n)^k.
func rate(k int, cpf, n uint64) float64 {
	if n == 0 {
		return 0
	}
	return math.Pow(-math.Expm1(float64(n)*math.Log1p(-1/float64(cpf))), float64(k))
}

// counterBytes is the size of k·cpf counters, two per byte, padded to 8.
func counterBytes(k int, cpf uint64) uint64 {
	return (uint64(k)*cpf + 15) / 16 * 8
}
