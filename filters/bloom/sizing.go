package bloom

import (
	"fmt"
	"math"
)

// Options describes a filter. Give either the figures a user knows
// (Elements and FPRate) or an explicit shape (Bits and Hashes); an explicit
// shape wins when both are set.
type Options struct {
	// Elements is the expected number of distinct elements.
	Elements uint64
	// FPRate is the target false-positive rate at Elements, in (0, 1).
	FPRate float64
	// Bits and Hashes set m and k directly (both or neither).
	Bits   uint64
	Hashes int
	// Blocked selects the cache-blocked layout (m rounded up to 512 bits).
	Blocked bool
}

// Validate checks the options and says which rule a value breaks.
func (o Options) Validate() error {
	switch {
	case (o.Bits == 0) != (o.Hashes == 0):
		return fmt.Errorf("bits %d and hashes %d must be set together: %w", o.Bits, o.Hashes, ErrInvalidOptions)
	case o.Bits != 0:
		if o.Bits > MaxBits {
			return fmt.Errorf("bits %d must be at most %d: %w", o.Bits, uint64(MaxBits), ErrInvalidOptions)
		}
		if o.Hashes < 1 || o.Hashes > MaxHashes {
			return fmt.Errorf("hashes %d must be in [1, %d]: %w", o.Hashes, MaxHashes, ErrInvalidOptions)
		}
	default:
		if o.Elements == 0 {
			return fmt.Errorf("elements must be > 0: %w", ErrInvalidOptions)
		}
		if !(o.FPRate > 0 && o.FPRate < 1) {
			return fmt.Errorf("fp rate %g must be in (0, 1): %w", o.FPRate, ErrInvalidOptions)
		}
	}
	return nil
}

// Shape returns the m and k the options describe (m already rounded for
// the blocked layout).
func (o Options) Shape() (m uint64, k int, err error) {
	if err := o.Validate(); err != nil {
		return 0, 0, err
	}
	if o.Bits != 0 {
		m, k = o.Bits, o.Hashes
		if o.Blocked {
			m = (m + BlockBits - 1) / BlockBits * BlockBits
		}
		return m, k, nil
	}
	m, k = OptimalShape(o.Elements, o.FPRate)
	// Rounding k can leave the estimate a hair above the target.
	for m < MaxBits && FPRate(m, k, o.Elements) > o.FPRate {
		m += m/1000 + 1
	}
	if o.Blocked {
		m, k = blockedShape(o.Elements, o.FPRate, m)
	}
	if m > MaxBits {
		return 0, 0, fmt.Errorf("%d elements at fp rate %g need %d bits, more than %d: %w",
			o.Elements, o.FPRate, m, uint64(MaxBits), ErrInvalidOptions)
	}
	return m, k, nil
}

// OptimalShape returns the classic m = ceil(-n ln p / ln²2) and
// k = round(m/n · ln 2) for n elements at false-positive rate p.
func OptimalShape(n uint64, p float64) (m uint64, k int) {
	mf := math.Ceil(-float64(n) * math.Log(p) / (math.Ln2 * math.Ln2))
	if mf < 1 {
		mf = 1
	}
	if mf > 2*MaxBits {
		mf = 2 * MaxBits
	}
	m = uint64(mf)
	k = int(math.Round(mf / float64(n) * math.Ln2))
	return m, min(max(k, 1), MaxHashes)
}

// blockedShape grows m by 2% steps from the standard m, retuning k, until
// the blocked estimate meets p.
func blockedShape(n uint64, p float64, m uint64) (uint64, int) {
	for {
		m = (m + BlockBits - 1) / BlockBits * BlockBits
		if m > MaxBits {
			return m, 1
		}
		k0 := int(math.Round(float64(m) / float64(n) * math.Ln2))
		for k := max(k0-2, 1); k <= min(k0+2, MaxHashes); k++ {
			if BlockedFPRate(m, k, n) <= p {
				return m, k
			}
		}
		m += m/50 + BlockBits
	}
}

// New returns a standard filter sized for n elements at false-positive rate p.
func New(n uint64, p float64) (*Filter, error) {
	return NewWithOptions(Options{Elements: n, FPRate: p})
}

// NewBlocked returns a cache-blocked filter sized for n elements at
// false-positive rate p.
func NewBlocked(n uint64, p float64) (*Filter, error) {
	return NewWithOptions(Options{Elements: n, FPRate: p, Blocked: true})
}

// NewWithOptions returns a filter described by o.
func NewWithOptions(o Options) (*Filter, error) {
	m, k, err := o.Shape()
	if err != nil {
		return nil, fmt.Errorf("new bloom filter: %w", err)
	}
	return newShape(m, k, o.Blocked), nil
}

func newShape(m uint64, k int, blocked bool) *Filter {
	f := &Filter{words: make([]uint64, (m+63)/64), m: m, k: uint32(k), blocked: blocked}
	if blocked {
		f.blocks = m / BlockBits
	}
	return f
}

// FPRate is the false-positive rate of a standard filter with m bits and k
// hashes after n distinct insertions: (1 - (1-1/m)^(kn))^k.
func FPRate(m uint64, k int, n uint64) float64 {
	if m == 0 {
		return 1
	}
	zero := math.Exp(float64(k) * float64(n) * math.Log1p(-1/float64(m)))
	return math.Pow(1-zero, float64(k))
}

// BlockedFPRate is the false-positive rate of a blocked filter with m bits
// (blocks of 512) and k hashes after n insertions: the standard rate inside
// one block averaged over the Poisson number of elements a block receives.
func BlockedFPRate(m uint64, k int, n uint64) float64 {
	if m < BlockBits {
		return 1
	}
	lambda := float64(n) * BlockBits / float64(m)
	if lambda == 0 {
		return 0
	}
	// Sum the Poisson terms around the mean: the first weight in log space,
	// the next ones by w(i+1) = w(i)·λ/(i+1), and a block's zero share
	// after i elements, (1-1/B)^(ik), by a factor (1-1/B)^k a step. The
	// sizing searches evaluate this thousands of times when a filter is
	// made, and a log-gamma and three exponentials a term would take tens
	// of milliseconds a dedup stage, which each pipeline shard makes
	// before its first packet (docs/results/pipeline.md, "Where the
	// flood's gap to 80% is", start-up); the recurrences differ from them
	// by a few units in the last place over the ~200 terms
	// (TestBlockedFPRateRecurrence).
	lo, hi := poissonSpan(lambda)
	l1 := math.Log1p(-1.0 / BlockBits)
	lg, _ := math.Lgamma(float64(lo) + 1)
	w := math.Exp(float64(lo)*math.Log(lambda) - lambda - lg)
	zero, step := math.Exp(float64(lo*k)*l1), math.Exp(float64(k)*l1)
	var s float64
	for i := lo; i <= hi; i++ {
		s += w * math.Pow(1-zero, float64(k))
		w *= lambda / float64(i+1)
		zero *= step
	}
	return min(s, 1)
}

// poissonSpan is the range of a Poisson(lambda) count whose terms
// BlockedFPRate sums: the mean ± 12 standard deviations and 20; the
// terms outside it weigh too little to change a rate.
func poissonSpan(lambda float64) (lo, hi int) {
	d := 12*math.Sqrt(lambda) + 20
	return max(0, int(lambda-d)), int(lambda + d)
}
