package rules

import (
	"fmt"
	"math"

	"github.com/flowmon/flowmon/filters/cms"
	"github.com/flowmon/flowmon/filters/hll"
)

// Sketch sizing. A counting rule's error is count-min's epsilon: with
// conservative update, N events in a window leave a key that had none
// estimated well below epsilon·N (docs/results/rules.md, "Count-min with
// conservative update"), so pick epsilon below above/N at the window's
// peak. A distinct-count rule's error is its cells' standard
// error; the cells are a grid of spreadDepth rows of spreadWidth cells,
// and a key's cell also holds the items of the keys it shares the cell
// with, which adds only their items the key does not have (a flood of
// sources all to port 80 adds one port). For a threshold a bitmap counts
// within the error (hll.CellBitsFor: up to about 130 at the default
// error), the cells are bitmaps of 64 to 256 bits (hll.BitSpread, 64 KiB a
// window at 64 bits); above, HyperLogLogs of 64 registers (hll.Spread,
// 512 KiB, two cache lines an update). Under a flood of random sources
// every SYN reads a new key's cells: in 64 KiB they stay in the cache,
// which speeds the flood trace of make bench-replay up markedly
// (docs/results/pipeline.md, "Where the flood's gap to 80% is").
const (
	// delta is count-min's failure probability (estimates within the error
	// with probability 1 - delta): 0.05 is three rows, three cache lines
	// an update; conservative update keeps the estimates far inside the
	// bound anyway (docs/results/rules.md, "Count-min with conservative
	// update").
	delta                = 0.05
	DefaultDistinctError = 0.13 // 64 registers a cell
	spreadWidth          = 4096
	spreadDepth          = 2
)

// newCounter returns a rule's per-key counter for one window slot: a
// count-min sketch for occurrences, a count-min grid of HyperLogLogs for
// distinct items (bitmaps for a threshold they count). errShare 0 takes
// the default.
func newCounter(distinct bool, errShare, above float64) (keyCounter, error) {
	if distinct {
		if errShare == 0 {
			errShare = DefaultDistinctError
		}
		if b := hll.CellBitsFor(above, errShare); b > 0 {
			s, err := hll.NewBitSpread(spreadWidth, spreadDepth, b, 0)
			if err != nil {
				return nil, fmt.Errorf("distinct-count sketch: %w", err)
			}
			return bitCounter{s}, nil
		}
		s, err := hll.NewSpread(spreadWidth, spreadDepth, hll.PrecisionFor(errShare))
		if err != nil {
			return nil, fmt.Errorf("distinct-count sketch: %w", err)
		}
		return spreadCounter{s, above}, nil
	}
	if errShare == 0 {
		errShare = DefaultError
	}
	s, err := cms.New(errShare, delta)
	if err != nil {
		return nil, fmt.Errorf("count-min sketch: %w", err)
	}
	return cmsCounter{s}, nil
}

type cmsCounter struct{ s *cms.Sketch }

func (c cmsCounter) add(key, _ uint64, n uint32) (float64, float64) {
	b, a := c.s.Add(key, n)
	return float64(b), float64(a)
}
func (c cmsCounter) estimate(key uint64) float64 { return float64(c.s.Estimate(key)) }
func (c cmsCounter) reset()                      { c.s.Reset() }
func (c cmsCounter) clear()                      { c.s.Clear() }
func (c cmsCounter) bytes() int                  { return c.s.Bytes() }

type spreadCounter struct {
	s     *hll.Spread
	above float64 // the rule's threshold
}

// add skips the estimate when no register changed (it did not move: +Inf
// both, no crossing), and when the key's zero registers alone bound it at
// the threshold or under (0 both: MayExceed, a few nanoseconds against
// the estimator's hundred). Otherwise it gives -Inf before, so a key above
// the threshold is reported at each change; the alert folds them.
func (c spreadCounter) add(key, item uint64, _ uint32) (float64, float64) {
	if !c.s.Add(key, item) {
		return math.Inf(1), math.Inf(1)
	}
	if !c.s.MayExceed(key, c.above) {
		return 0, 0
	}
	return math.Inf(-1), c.s.Estimate(key)
}
func (c spreadCounter) estimate(key uint64) float64 { return c.s.Estimate(key) }
func (c spreadCounter) reset()                      { c.s.Reset() }
func (c spreadCounter) clear()                      { c.s.Clear() }
func (c spreadCounter) bytes() int                  { return c.s.Bytes() }

type bitCounter struct{ s *hll.BitSpread }

// add gives -Inf before when a bit changed, as spreadCounter does: a key
// above the threshold is reported at each change, and the alert folds
// them.
func (c bitCounter) add(key, item uint64, _ uint32) (float64, float64) {
	e, changed := c.s.Add(key, item)
	if !changed {
		return math.Inf(1), math.Inf(1)
	}
	return math.Inf(-1), e
}
func (c bitCounter) estimate(key uint64) float64 { return c.s.Estimate(key) }
func (c bitCounter) reset()                      { c.s.Reset() }
func (c bitCounter) clear()                      { c.s.Clear() }
func (c bitCounter) bytes() int                  { return c.s.Bytes() }
