package fbf

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/flowmon/flowmon/filters/bloom"
)

// CheckMode selects the membership check.
type CheckMode uint8

const (
	// Optimized is Algorithm 2: the future filter alone, any consecutive
	// pair, or the oldest past filter alone (see the package doc).
	Optimized CheckMode = iota
	// Simple is Section III-A: any single filter.
	Simple
	// PairsOnly is Algorithm 2 without the oldest filter alone.
	PairsOnly
)

func (c CheckMode) String() string {
	switch c {
	case Optimized:
		return "optimized"
	case Simple:
		return "simple"
	case PairsOnly:
		return "pairs-only"
	}
	return fmt.Sprintf("check-%d", uint8(c))
}

// Model selects the false-positive model used by EstimatedFPP, sizing and
// adaptive resizing.
type Model uint8

const (
	// Correlated accounts for the period consecutive filters share (see
	// the package doc); it is the default because Equation 3 underestimates
	// the rate of an N-FBF with N > 1.
	Correlated Model = iota
	// Independent is Equation 3 as printed: every filter independent.
	Independent
)

func (m Model) String() string {
	if m == Independent {
		return "independent"
	}
	return "correlated"
}

// Sentinel errors.
var (
	// ErrInvalidOptions is returned (wrapped) by Options.Validate.
	ErrInvalidOptions = errors.New("invalid fbf options")
)

// Options describes an FBF. Give the constituent filters' shape either
// explicitly (Bits and Hashes) or from ElementsPerPeriod and FPRate.
type Options struct {
	// ElementsPerPeriod is the expected number of insertions per refresh
	// period, and FPRate the target false-positive probability of the whole
	// FBF (Equation 3) at that load.
	ElementsPerPeriod uint64
	FPRate            float64
	// Bits and Hashes set every constituent filter's m and k directly.
	Bits   uint64
	Hashes int
	// Blocked uses cache-blocked constituent filters.
	Blocked bool
	// Past is N, the number of past filters (≥ 1; default 1, the basic FBF).
	Past int
	// Refresh is t, the refresh period (> 0).
	Refresh time.Duration
	// Check is the membership check (default Optimized).
	Check CheckMode
	// Model is the false-positive model (default Correlated).
	Model Model
	// Adaptive configures Algorithm 3; the zero value disables it.
	Adaptive Adaptive
}

// Adaptive configures dynamic resizing (Algorithm 3).
type Adaptive struct {
	// TargetFPP enables resizing when > 0.
	TargetFPP float64
	// Interval is how often, in packet time, the estimate is computed and
	// the statistics published (default 1 s, as in the paper).
	Interval time.Duration
	// RefreshStep is the additive change of t (default 1 s, as in the paper).
	RefreshStep time.Duration
	// MinRefresh and MaxRefresh bound t (defaults: RefreshStep and 8·Refresh).
	MinRefresh, MaxRefresh time.Duration
	// MaxFilters bounds the number of filters N+2 (default 64).
	MaxFilters int
	// MinWindow, if set, is a floor on the guaranteed window (N+1)·t.
	MinWindow time.Duration
	// Current compares the current estimate with the target, as Algorithm 3
	// does. By default the estimate is projected to the next refresh point
	// (the future and present filters keep filling at the insertion rate of
	// the last interval until then), so the resizing acts before the target
	// is crossed rather than after; see the package doc.
	Current bool
}

// Validate checks o and says which rule a value breaks.
func (o Options) Validate() error {
	if o.Refresh <= 0 {
		return fmt.Errorf("refresh period %v must be > 0: %w", o.Refresh, ErrInvalidOptions)
	}
	if o.Past < 0 || o.Past > maxFilters-2 {
		return fmt.Errorf("past filters %d must be in [1, %d]: %w", o.Past, maxFilters-2, ErrInvalidOptions)
	}
	if o.Model > Independent {
		return fmt.Errorf("model %d unknown: %w", o.Model, ErrInvalidOptions)
	}
	if o.Check > PairsOnly {
		return fmt.Errorf("check mode %d unknown: %w", o.Check, ErrInvalidOptions)
	}
	if o.Bits != 0 || o.Hashes != 0 {
		if err := (bloom.Options{Bits: o.Bits, Hashes: o.Hashes}).Validate(); err != nil {
			return fmt.Errorf("constituent filter: %w: %w", err, ErrInvalidOptions)
		}
	} else {
		if o.ElementsPerPeriod == 0 {
			return fmt.Errorf("elements per period must be > 0 (or set bits and hashes): %w", ErrInvalidOptions)
		}
		if !(o.FPRate > 0 && o.FPRate < 1) {
			return fmt.Errorf("fp rate %g must be in (0, 1): %w", o.FPRate, ErrInvalidOptions)
		}
	}
	a := o.Adaptive
	if a.TargetFPP == 0 {
		if a.Interval < 0 {
			return fmt.Errorf("adaptive interval %v must be ≥ 0: %w", a.Interval, ErrInvalidOptions)
		}
		return nil
	}
	switch {
	case !(a.TargetFPP > 0 && a.TargetFPP < 1):
		return fmt.Errorf("target fpp %g must be in (0, 1): %w", a.TargetFPP, ErrInvalidOptions)
	case a.Interval < 0 || a.RefreshStep < 0 || a.MinRefresh < 0 || a.MaxRefresh < 0 || a.MinWindow < 0:
		return fmt.Errorf("adaptive durations must be ≥ 0: %w", ErrInvalidOptions)
	case a.MaxFilters != 0 && (a.MaxFilters < 3 || a.MaxFilters > maxFilters):
		return fmt.Errorf("max filters %d must be in [3, %d]: %w", a.MaxFilters, maxFilters, ErrInvalidOptions)
	case a.MaxRefresh != 0 && a.MinRefresh > a.MaxRefresh:
		return fmt.Errorf("min refresh %v must be ≤ max refresh %v: %w", a.MinRefresh, a.MaxRefresh, ErrInvalidOptions)
	}
	return nil
}

// maxFilters bounds N+2 whatever the options say.
const maxFilters = 1024

// withDefaults fills the zero fields.
func (o Options) withDefaults() Options {
	if o.Past == 0 {
		o.Past = 1
	}
	a := &o.Adaptive
	if a.Interval == 0 {
		a.Interval = time.Second
	}
	if a.TargetFPP > 0 {
		if a.RefreshStep == 0 {
			a.RefreshStep = time.Second
		}
		if a.MinRefresh == 0 {
			a.MinRefresh = min(a.RefreshStep, o.Refresh)
		}
		if a.MaxRefresh == 0 {
			a.MaxRefresh = 8 * o.Refresh
		}
		if a.MaxFilters == 0 {
			a.MaxFilters = 64
		}
		a.MaxFilters = max(a.MaxFilters, o.Past+2)
	}
	return o
}

// Shape returns the constituent filters' m and k.
func (o Options) Shape() (m uint64, k int, err error) {
	if err := o.Validate(); err != nil {
		return 0, 0, err
	}
	o = o.withDefaults()
	if o.Bits != 0 {
		return o.Bits, o.Hashes, nil
	}
	m, k = SizeFor(o.ElementsPerPeriod, o.Past, o.FPRate, o.Check, o.Model, o.Blocked)
	if m == 0 || m > bloom.MaxBits {
		return 0, 0, fmt.Errorf("%d elements per period at fp rate %g: too large: %w", o.ElementsPerPeriod, o.FPRate, ErrInvalidOptions)
	}
	return m, k, nil
}

// SizeFor returns the smallest constituent shape (m, k) whose steady-state
// estimate of model md (future n, present and every past filter 2n, each
// pair of neighbours sharing n) meets target with past filters and check c;
// m is 0 if none fits under bloom.MaxBits. The search evaluates the
// filters' rates a thousand times or so, so its answers are kept: every
// shard of a pipeline makes the same dedup filters, and a reload or a
// snapshot's restore makes them again.
func SizeFor(n uint64, past int, target float64, c CheckMode, md Model, blocked bool) (m uint64, k int) {
	key := sizeKey{n, past, target, c, md, blocked}
	sized.Lock()
	defer sized.Unlock()
	if s, ok := sized.shapes[key]; ok {
		return s.m, s.k
	}
	m, k = sizeFor(n, past, target, c, md, blocked)
	if len(sized.shapes) >= maxSized {
		clear(sized.shapes) // configurations are few: this only bounds a caller that sweeps them
	}
	sized.shapes[key] = sizedShape{m, k}
	return m, k
}

type sizeKey struct {
	n       uint64
	past    int
	target  float64
	c       CheckMode
	md      Model
	blocked bool
}

type sizedShape struct {
	m uint64
	k int
}

const maxSized = 256

var sized = struct {
	sync.Mutex
	shapes map[sizeKey]sizedShape
}{shapes: map[sizeKey]sizedShape{}}

// sizeFor is SizeFor's search.
func sizeFor(n uint64, past int, target float64, c CheckMode, md Model, blocked bool) (m uint64, k int) {
	fut := make([]uint64, past+2)
	for i := range fut {
		fut[i] = n
	}
	ps := make([]float64, len(fut))
	fits := func(m uint64, k int) bool {
		// The future filter holds n, every other 2n: two rates, not
		// past+2.
		ps[0] = filterFP(m, k, n, blocked)
		full := filterFP(m, k, 2*n, blocked)
		for i := 1; i < len(ps); i++ {
			ps[i] = full
		}
		if md == Independent || c == Simple {
			return estimate(ps, c) <= target
		}
		return correlated(m, k, fut, ps, c) <= target
	}
	for kk := 1; kk <= 16; kk++ {
		lo, hi := uint64(bloom.BlockBits), uint64(bloom.BlockBits)
		for !fits(hi, kk) {
			if hi > bloom.MaxBits {
				break
			}
			lo, hi = hi, hi*2
		}
		if hi > bloom.MaxBits {
			continue
		}
		for lo+1 < hi { // fits(hi) holds, and fits(lo) fails unless lo is the minimum
			mid := lo + (hi-lo)/2
			if fits(mid, kk) {
				hi = mid
			} else {
				lo = mid
			}
		}
		if blocked {
			hi = (hi + bloom.BlockBits - 1) / bloom.BlockBits * bloom.BlockBits
		}
		if m == 0 || hi < m {
			m, k = hi, kk
		}
	}
	return m, k
}

func filterFP(m uint64, k int, l uint64, blocked bool) float64 {
	if blocked {
		return bloom.BlockedFPRate(m, k, l)
	}
	return bloom.FPRate(m, k, l)
}
