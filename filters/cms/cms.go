package cms

import (
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/flowmon/flowmon/internal/hashmix"
)

// totalShards spreads Total over padded counters picked by the key's
// hash, so that workers adding different keys do not all write one cache
// line.
const (
	totalShardBits = 4
	totalShards    = 1 << totalShardBits
	shardBytes     = 64
)

type totalShard struct {
	n atomic.Uint64
	_ [shardBytes - 8]byte
}

// Sketch is a count-min sketch with conservative update over 64-bit key
// hashes. See the package doc for the error bound and the guarantees under
// concurrent use. Safe for concurrent use; the zero value is not usable,
// build one with New, NewSize or NewWithOptions.
type Sketch struct {
	cells []atomic.Uint32 // depth rows of width counters, row after row
	width uint64
	depth int
	seed  uint64
	total [totalShards]totalShard
}

// New returns a sketch whose estimates exceed the true count by at most
// epsilon·Total with probability at least 1-delta: width ceil(e/epsilon),
// depth ceil(ln(1/delta)).
func New(epsilon, delta float64) (*Sketch, error) {
	return NewWithOptions(Options{Epsilon: epsilon, Delta: delta})
}

// NewSize returns a sketch of depth rows of width counters.
func NewSize(width, depth int) (*Sketch, error) {
	return NewWithOptions(Options{Width: width, Depth: depth})
}

// NewWithOptions returns a sketch described by o.
func NewWithOptions(o Options) (*Sketch, error) {
	w, d, err := o.Shape()
	if err != nil {
		return nil, fmt.Errorf("new count-min sketch: %w", err)
	}
	return &Sketch{
		cells: make([]atomic.Uint32, w*d),
		width: uint64(w),
		depth: d,
		seed:  o.Seed,
	}, nil
}

// index fills idx[:depth] with the key's counter in each row (as an index
// into cells) and returns h1, whose top bits pick the Total shard.
func (s *Sketch) index(h uint64, idx *[MaxDepth]uint64) uint64 {
	h1 := hashmix.Mix(h ^ s.seed)
	off := uint64(0)
	for r := range s.depth {
		idx[r] = off + hashmix.Nth(h1, r, s.width)
		off += s.width
	}
	return h1
}

// Add adds n to the count of key h with the conservative update and
// returns the key's estimate just before and just after its own step. A
// caller detects that the key reached threshold T as before < T <= after:
// at most one Add of a key sees that for a given T between Resets (see the
// package doc for when exactly one does). Counts saturate at MaxUint32.
// Add allocates nothing.
func (s *Sketch) Add(h uint64, n uint32) (before, after uint32) {
	var idx [MaxDepth]uint64
	h1 := s.index(h, &idx)
	if n != 0 {
		s.total[h1>>(64-totalShardBits)].n.Add(uint64(n))
	}
	rows := idx[:s.depth]
	for {
		// The smallest counter, the lowest row on ties, read in row order:
		// the exactly-once argument of the package doc needs both.
		j, m := 0, s.cells[rows[0]].Load()
		for r := 1; r < len(rows); r++ {
			if v := s.cells[rows[r]].Load(); v < m {
				j, m = r, v
			}
		}
		t := m + n
		if t < m {
			t = math.MaxUint32
		}
		if t == m {
			return m, m
		}
		for r, i := range rows {
			if r == j {
				continue
			}
			c := &s.cells[i]
			for v := c.Load(); v < t && !c.CompareAndSwap(v, t); v = c.Load() {
			}
		}
		if s.cells[rows[j]].CompareAndSwap(m, t) {
			return m, t
		}
	}
}

// Estimate returns the estimated count of key h: the smallest of its
// counters. It never decreases between Resets. Estimate allocates nothing.
func (s *Sketch) Estimate(h uint64) uint32 {
	var idx [MaxDepth]uint64
	s.index(h, &idx)
	m := uint32(math.MaxUint32)
	for _, i := range idx[:s.depth] {
		m = min(m, s.cells[i].Load())
	}
	return m
}

// Reset zeroes every counter and Total with atomic stores. It may run
// while other goroutines Add: see the package doc for what those Adds
// leave.
func (s *Sketch) Reset() {
	for i := range s.cells {
		s.cells[i].Store(0)
	}
	for i := range s.total {
		s.total[i].n.Store(0)
	}
}

// Total is N, the sum of the counts added since the last Reset (the n of
// every Add, saturated or not). Read during Adds, it is the sum of its
// shards read one after another.
func (s *Sketch) Total() uint64 {
	var n uint64
	for i := range s.total {
		n += s.total[i].n.Load()
	}
	return n
}

// Bytes is the memory the sketch holds: 4·width·depth bytes of counters
// and the shards of Total.
func (s *Sketch) Bytes() int { return 4*len(s.cells) + totalShards*shardBytes }

// Width is w, the counters per row.
func (s *Sketch) Width() int { return int(s.width) }

// Depth is d, the number of rows.
func (s *Sketch) Depth() int { return s.depth }

// Seed is the seed the sketch's indexes were derived with.
func (s *Sketch) Seed() uint64 { return s.seed }

// Epsilon is the additive error bound of the sketch's width as a fraction
// of Total: e/w.
func (s *Sketch) Epsilon() float64 { return math.E / float64(s.width) }

// Delta is the probability bound of the sketch's depth: e^-d.
func (s *Sketch) Delta() float64 { return math.Exp(-float64(s.depth)) }

// Clear zeroes the sketch as Reset does, with one memory clear instead
// of an atomic store (a locked instruction) per counter, but it must not
// run while another goroutine uses the sketch: a caller that rotates
// sketches clears one no goroutine writes any more.
func (s *Sketch) Clear() {
	if len(s.cells) > 0 {
		clear(unsafe.Slice((*uint32)(unsafe.Pointer(&s.cells[0])), len(s.cells)))
	}
	for i := range s.total {
		s.total[i].n.Store(0)
	}
}
