package cms

import (
	"errors"
	"fmt"
	"math"
)

// Limits on a sketch's shape.
const (
	MaxDepth = 32      // rows: δ down to e^-32
	MaxCells = 1 << 31 // width·depth: 8 GiB of counters, a bound that catches nonsense sizes
)

// ErrInvalidOptions is returned (wrapped) by Options.Validate and the
// constructors.
var ErrInvalidOptions = errors.New("invalid options")

// Options describes a sketch. Give either the figures a user knows
// (Epsilon and Delta) or an explicit shape (Width and Depth); an explicit
// shape wins when both are set.
type Options struct {
	// Epsilon is the additive error as a fraction of Total, in (0, 1):
	// Width = ceil(e/Epsilon).
	Epsilon float64
	// Delta is the probability that a key's error passes Epsilon·Total,
	// in (0, 1): Depth = ceil(ln(1/Delta)).
	Delta float64
	// Width and Depth set w and d directly (both or neither).
	Width, Depth int
	// Seed decides which keys share counters (see the package doc).
	Seed uint64
}

// Validate reports every problem with o, joined, each naming the rule and
// the value.
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf(format+": %w", append(a, ErrInvalidOptions)...))
	}
	switch {
	case (o.Width == 0) != (o.Depth == 0):
		bad("width %d and depth %d must be set together", o.Width, o.Depth)
	case o.Width != 0:
		if o.Width < 1 || int64(o.Width) > MaxCells {
			bad("width %d must be in [1, %d]", o.Width, int64(MaxCells))
		}
		if o.Depth < 1 || o.Depth > MaxDepth {
			bad("depth %d must be in [1, %d]", o.Depth, MaxDepth)
		}
		if o.Width >= 1 && o.Depth >= 1 && o.Depth <= MaxDepth && int64(o.Width) > MaxCells/int64(o.Depth) {
			bad("width %d times depth %d must be at most %d counters", o.Width, o.Depth, int64(MaxCells))
		}
	default:
		if !(o.Epsilon > 0 && o.Epsilon < 1) {
			bad("epsilon %v must be in (0, 1)", o.Epsilon)
		}
		if !(o.Delta > 0 && o.Delta < 1) {
			bad("delta %v must be in (0, 1)", o.Delta)
		} else if d := rowsFor(o.Delta); d > MaxDepth {
			bad("delta %v needs %g rows, more than %d", o.Delta, d, MaxDepth)
		}
		if o.Epsilon > 0 && o.Epsilon < 1 && o.Delta > 0 && o.Delta < 1 {
			if w, d := widthFor(o.Epsilon), rowsFor(o.Delta); d <= MaxDepth && w*d > MaxCells {
				bad("epsilon %v and delta %v need %g×%g counters, more than %d", o.Epsilon, o.Delta, w, d, int64(MaxCells))
			}
		}
	}
	return errors.Join(errs...)
}

// Shape returns the width and depth o describes.
func (o Options) Shape() (width, depth int, err error) {
	if err := o.Validate(); err != nil {
		return 0, 0, err
	}
	if o.Width != 0 {
		return o.Width, o.Depth, nil
	}
	return int(widthFor(o.Epsilon)), int(rowsFor(o.Delta)), nil
}

// widthFor is ceil(e/ε), as a float so that a tiny ε cannot overflow.
func widthFor(eps float64) float64 { return math.Ceil(math.E / eps) }

// rowsFor is ceil(ln(1/δ)), at least 1, as a float for the same reason.
func rowsFor(delta float64) float64 { return max(1, math.Ceil(-math.Log(delta))) }
