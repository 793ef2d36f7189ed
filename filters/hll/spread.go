package hll

import (
	"errors"
	"fmt"
	"math"
)

// Limits on a Spread's shape.
const (
	MaxDepth         = 32
	MaxCellPrecision = 12      // 4096 registers a cell
	MaxSpreadBytes   = 1 << 34 // 16 GiB, a bound that catches nonsense sizes
)

// SpreadOptions describes a Spread. Give either the figures a user knows
// (RelErr, Keys, Delta) or an explicit shape (Width, Depth, Precision);
// an explicit shape wins when set.
type SpreadOptions struct {
	// RelErr is the cells' standard error: Precision is the smallest p with
	// 1.04/sqrt(2^p) <= RelErr (at least MinPrecision).
	RelErr float64
	// Keys is the number of keys expected in a window: Width = Keys.
	Keys int
	// Delta is the probability that every row of a key holds more than
	// e·D/Width items of other keys: Depth = ceil(ln(1/Delta)).
	Delta float64
	// Width, Depth and Precision set the shape directly (all or none).
	Width, Depth, Precision int
	// Seed decides which keys share cells (the cms package doc says why
	// it is 0 by default and when to set a secret one).
	Seed uint64
}

// Validate reports every problem with o, joined, each naming the rule and
// the value.
func (o SpreadOptions) Validate() error {
	_, _, _, err := o.shape()
	return err
}

// Shape returns the width, depth and precision o describes.
func (o SpreadOptions) Shape() (width, depth, precision int, err error) {
	return o.shape()
}

func (o SpreadOptions) shape() (w, d, p int, err error) {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf(format+": %w", append(a, ErrInvalidOptions)...))
	}
	if o.Width != 0 || o.Depth != 0 || o.Precision != 0 {
		w, d, p = o.Width, o.Depth, o.Precision
		if w < 1 {
			bad("width %d must be at least 1", w)
		}
	} else {
		w = o.Keys
		if w < 1 {
			bad("keys %d must be at least 1", w)
		}
		if !(o.RelErr > 0 && o.RelErr < 1) {
			bad("relative error %v must be in (0, 1)", o.RelErr)
		} else {
			p = PrecisionFor(o.RelErr)
		}
		if !(o.Delta > 0 && o.Delta < 1) {
			bad("delta %v must be in (0, 1)", o.Delta)
		} else {
			d = int(min(max(1, math.Ceil(-math.Log(o.Delta))), MaxDepth+1))
		}
	}
	if d != 0 && (d < 1 || d > MaxDepth) {
		bad("depth %d must be in [1, %d]", d, MaxDepth)
	}
	if p != 0 && (p < MinPrecision || p > MaxCellPrecision) {
		bad("cell precision %d must be in [%d, %d]", p, MinPrecision, MaxCellPrecision)
	}
	if o.Width != 0 || o.Depth != 0 || o.Precision != 0 {
		if d == 0 || p == 0 {
			bad("width %d, depth %d and precision %d must be set together", o.Width, o.Depth, o.Precision)
		}
	}
	if len(errs) == 0 && float64(w)*float64(d)*float64(uint64(1)<<p) > MaxSpreadBytes {
		bad("%d×%d cells of %d registers need more than %d bytes", w, d, 1<<p, uint64(MaxSpreadBytes))
	}
	if err := errors.Join(errs...); err != nil {
		return 0, 0, 0, err
	}
	return w, d, p, nil
}

// Spread counts distinct items per key in fixed memory: a count-min grid
// of depth rows and width columns whose cells are HyperLogLogs of 2^p
// registers (see the package doc for the error). Safe for concurrent use
// without locks; Add and Estimate allocate nothing. Build one with
// NewSpread, NewSpreadFor or NewSpreadWithOptions.
type Spread struct {
	grid
	sh shape
}

// NewSpread returns a Spread of depth rows of width cells of
// 2^precision registers: width·depth·2^precision bytes.
func NewSpread(width, depth, precision int) (*Spread, error) {
	return NewSpreadWithOptions(SpreadOptions{Width: width, Depth: depth, Precision: precision})
}

// NewSpreadFor returns a Spread for keys keys whose cells have standard
// error relErr and whose collision bound fails with probability delta:
// width = keys, depth = ceil(ln(1/delta)), precision = PrecisionFor(relErr).
func NewSpreadFor(relErr float64, keys int, delta float64) (*Spread, error) {
	return NewSpreadWithOptions(SpreadOptions{RelErr: relErr, Keys: keys, Delta: delta})
}

// NewSpreadWithOptions returns a Spread described by o.
func NewSpreadWithOptions(o SpreadOptions) (*Spread, error) {
	w, d, p, err := o.shape()
	if err != nil {
		return nil, fmt.Errorf("new spread sketch: %w", err)
	}
	return &Spread{grid: newGrid(w, d, uint64(1)<<p/8, o.Seed), sh: newShape(uint(p))}, nil
}

// Add adds the item itemHash to the key keyHash: the item's register in
// the key's cell of every row. It reports whether a register changed (if
// not, no estimate changed).
func (s *Spread) Add(keyHash, itemHash uint64) (changed bool) {
	idx, rank := register(itemHash, s.sh.p)
	var off [MaxDepth]uint64
	s.cells(keyHash, &off)
	word, sh := idx>>3, uint(idx&7)*8
	// Load the d words first: their cache misses overlap, where a load
	// after a CAS (a locked instruction) would wait for it.
	var old [MaxDepth]uint64
	for r, o := range off[:s.depth] {
		old[r] = s.words[o+word].Load()
	}
	for r, o := range off[:s.depth] {
		if raise(&s.words[o+word], old[r], sh, rank) {
			changed = true
		}
	}
	return changed
}

// Estimate returns the estimated number of distinct items of the key
// keyHash: the smallest estimate of its cells. It never decreases between
// Resets.
func (s *Spread) Estimate(keyHash uint64) float64 {
	var off [MaxDepth]uint64
	s.cells(keyHash, &off)
	// Touch the d cells first, so that their cache misses overlap (a
	// cell of 64 registers is one cache line).
	for _, o := range off[:s.depth] {
		s.words[o].Load()
	}
	e := math.Inf(1)
	for _, o := range off[:s.depth] {
		e = min(e, s.sh.estimate(s.words[o:o+s.cellWords]))
	}
	return e
}

// Merge adds o's items to s, cell by cell: s then estimates every key's
// items of both. Both must have the same shape and seed; otherwise Merge
// returns an error wrapping ErrIncompatible and leaves s unchanged.
func (s *Spread) Merge(o *Spread) error {
	if s.width != o.width || s.depth != o.depth || s.sh.p != o.sh.p || s.seed != o.seed {
		return fmt.Errorf("merge spread sketch (width %d depth %d precision %d seed %#x) with (width %d depth %d precision %d seed %#x): %w",
			s.width, s.depth, s.sh.p, s.seed, o.width, o.depth, o.sh.p, o.seed, ErrIncompatible)
	}
	mergeWords(s.words, o.words)
	return nil
}

// Precision is p: a cell has 2^p registers.
func (s *Spread) Precision() int { return int(s.sh.p) }

// StdError is a cell's relative standard error 1.04/sqrt(2^p).
func (s *Spread) StdError() float64 { return 1.04 / math.Sqrt(s.sh.m) }

// CollisionBound is e·D/width for D distinct (key, item) pairs in a
// window: with probability at least 1 - e^-depth, some row of a key holds
// at most that many items of other keys (see the package doc).
func (s *Spread) CollisionBound(d float64) float64 { return math.E * d / float64(s.width) }

// MayExceed reports whether the key's estimate may be above n, cheaply:
// false is certain, true means Estimate decides. A cell's estimate is
// α∞m² / (Σ2^-M + m·σ(V/m)), V its zero registers, and the sum is never
// negative, so α∞m / σ(V/m) bounds it from the zeros alone, counted
// without the estimator's table lookups; the key's estimate is its
// smallest cell's, so one cell bounded at n or under settles it. Callers
// that test a threshold after each Add skip most estimates this way.
func (s *Spread) MayExceed(keyHash uint64, n float64) bool {
	var off [MaxDepth]uint64
	s.cells(keyHash, &off)
	for _, o := range off[:s.depth] {
		zeros := 0
		for i := range s.cellWords {
			zeros += zeroBytes(s.words[o+i].Load())
		}
		if !s.sh.mayExceed(zeros, n) {
			return false
		}
	}
	return true
}
