package hll

import (
	"fmt"
	"math"
	"math/bits"
)

// Limits on a BitSpread's cells.
const (
	MinCellBits = 64
	MaxCellBits = 256
)

// BitSpread counts distinct items per key as Spread does, with a bitmap
// of b bits in each cell instead of b one-byte registers: the bit of an
// item is the register its HLL would raise (the top log2 b bits of its
// mixed hash), and a cell's estimate is linear counting (Whang, Vander-
// Zanden and Taylor, "A linear-time probabilistic counting algorithm for
// database applications", TODS 1990, Section 2), b·ln(b/V) with V the
// zero bits: what an HLL of b registers estimates from its zero registers
// alone, and what Ertl's estimator reduces to for few items. It is the
// sketch for a threshold a few times b at most: there a cell of b bits is
// as exact as one of b registers in an eighth of the memory, so a grid that
// misses the cache at every new key under a flood of sources fits in it.
// Past about b·ln b items a bitmap saturates (see Estimate); CellBitsFor
// picks b for a threshold and says when none fits.
//
// The grid and its bound are Spread's (see the package doc): a key's cells
// hold supersets of its items, so its estimate is never below the one its
// own bitmap would give, and a row adds at most e·D/w other items with
// probability 1 - 1/e. Safe for concurrent use without locks (bits are set
// with atomic ORs); Add and Estimate allocate nothing.
type BitSpread struct {
	grid
	p  uint      // log2 of the cell's bits
	lc []float64 // lc[V]: the estimate of a cell with V zero bits
}

// NewBitSpread returns a BitSpread of depth rows of width cells of
// cellBits bits (64, 128 or 256): width·depth·cellBits/8 bytes.
func NewBitSpread(width, depth, cellBits int, seed uint64) (*BitSpread, error) {
	switch {
	case width < 1:
		return nil, fmt.Errorf("new bit spread: width %d must be at least 1: %w", width, ErrInvalidOptions)
	case depth < 1 || depth > MaxDepth:
		return nil, fmt.Errorf("new bit spread: depth %d must be in [1, %d]: %w", depth, MaxDepth, ErrInvalidOptions)
	case cellBits < MinCellBits || cellBits > MaxCellBits || cellBits&(cellBits-1) != 0:
		return nil, fmt.Errorf("new bit spread: cell bits %d must be a power of two in [%d, %d]: %w",
			cellBits, MinCellBits, MaxCellBits, ErrInvalidOptions)
	case float64(width)*float64(depth)*float64(cellBits/8) > MaxSpreadBytes:
		return nil, fmt.Errorf("new bit spread: %d×%d cells of %d bits need more than %d bytes: %w",
			width, depth, cellBits, uint64(MaxSpreadBytes), ErrInvalidOptions)
	}
	s := &BitSpread{
		grid: newGrid(width, depth, uint64(cellBits/64), seed),
		p:    uint(bits.TrailingZeros(uint(cellBits))),
		lc:   make([]float64, cellBits+1),
	}
	b := float64(cellBits)
	s.lc[0] = b * math.Log(2*b) // saturated: see Estimate
	for v := 1; v <= cellBits; v++ {
		s.lc[v] = b * math.Log(b/float64(v))
	}
	return s, nil
}

// LinearStdError is linear counting's relative standard error for n items
// in b bits, sqrt(b·(e^t - t - 1))/n with t = n/b (Whang et al., Section
// 3); 0 for n = 0.
func LinearStdError(n float64, b int) float64 {
	if n <= 0 {
		return 0
	}
	t := n / float64(b)
	return math.Sqrt(float64(b)*(math.Exp(t)-t-1)) / n
}

// CellBitsFor returns the fewest cell bits (64, 128 or 256) whose linear
// count has at most relErr relative standard error at n items and leaves
// at least b/8 bits zero there in expectation (b·e^(-n/b) >= b/8, n <=
// b·ln 8, well inside the bitmap's range), or 0 when none does: count n
// items with a Spread.
func CellBitsFor(n, relErr float64) int {
	for b := MinCellBits; b <= MaxCellBits; b *= 2 {
		if n <= float64(b)*math.Log(8) && LinearStdError(n, b) <= relErr {
			return b
		}
	}
	return 0
}

// bit returns the word of a cell and the bit within it of an item.
func (s *BitSpread) bit(itemHash uint64) (word uint64, mask uint64) {
	idx, _ := register(itemHash, s.p)
	return idx >> 6, 1 << (idx & 63)
}

// zeros is the number of zero bits of the cell at word o.
func (s *BitSpread) zeros(o uint64) int {
	set := 0
	for i := range s.cellWords {
		set += bits.OnesCount64(s.words[o+i].Load())
	}
	return int(s.cellWords)*64 - set
}

// Add adds the item itemHash to the key keyHash: its bit in the key's cell
// of every row. It reports whether a bit changed and, if one did, the
// key's estimate after the Add (its cells' lines are in the cache by
// then, so this costs a few popcounts). A caller that tests a threshold
// after each change sees a crossing at least once; two goroutines adding
// to one key at once may both see it.
func (s *BitSpread) Add(keyHash, itemHash uint64) (estimate float64, changed bool) {
	word, mask := s.bit(itemHash)
	var off [MaxDepth]uint64
	s.cells(keyHash, &off)
	// Load the d words first: their cache misses overlap, where a load
	// after an OR (a locked instruction) would wait for it.
	var old [MaxDepth]uint64
	for r, o := range off[:s.depth] {
		old[r] = s.words[o+word].Load()
	}
	for r, o := range off[:s.depth] {
		if old[r]&mask == 0 {
			s.words[o+word].Or(mask)
			changed = true
		}
	}
	if !changed {
		return 0, false
	}
	return s.least(&off), true
}

// least is the smallest linear count of the cells at off[:depth].
func (s *BitSpread) least(off *[MaxDepth]uint64) float64 {
	e := math.Inf(1)
	for _, o := range off[:s.depth] {
		e = min(e, s.lc[s.zeros(o)])
	}
	return e
}

// Estimate returns the estimated number of distinct items of the key
// keyHash: the smallest linear count of its cells. A cell with no zero bit
// left counts as b·ln(2b), linear counting's estimate at half a zero bit:
// the bitmap cannot tell more than that its items are about b·ln b or
// more. It never decreases between Resets.
func (s *BitSpread) Estimate(keyHash uint64) float64 {
	var off [MaxDepth]uint64
	s.cells(keyHash, &off)
	return s.least(&off)
}

// CellBits is b, the bits of a cell.
func (s *BitSpread) CellBits() int { return int(s.cellWords) * 64 }
