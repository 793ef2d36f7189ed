// Package fcf is the fingerprint-compressed filter of Bonomi, Mitzenmacher,
// Panigrahy, Singh and Varghese, "Beyond Bloom Filters: From Approximate
// Membership Checks to Approximate State Machines" (SIGCOMM 2006, Section
// 4): a d-left hash table whose cells hold a short fingerprint of the key
// and the key's state.
//
// # Structure
//
// d subtables of B buckets, each bucket h cells; a cell is f fingerprint
// bits (0 marks an empty cell) and s state bits. A key's hash gives one
// bucket in each subtable and one fingerprint.
//
//   - Insert(x, v): the least loaded of the d buckets (the leftmost on a
//     tie, "d-left") takes (fingerprint, v) in a free cell. When all d
//     buckets are full the insert fails (an overflow).
//   - Lookup(x): the cells of the d buckets whose fingerprint matches. None:
//     absent. One: its state. Two or more: "don't know" (two keys share
//     the fingerprint and the answer cannot be trusted).
//   - Modify / Delete(x, v): the matching cell holding v (or the only
//     matching cell) is changed or emptied.
//
// Modify and Delete share the lookup's error: when another key's cell in
// one of x's buckets carries x's fingerprint (probability about the
// false-positive rate p below) and holds v too, the first of the two cells
// is taken, which may be the other key's. That key then holds a wrong
// value, or its own delete finds nothing (ErrNotFound) while x's cell
// stays. Which key is operated on first decides whether this shows.
//
// # Sizing
//
// A non-member is reported present when one of the about d*h*a occupied
// cells it is compared with (load a) carries its fingerprint: p is about
// d*h*a / 2^f, so f = ceil(log2(d*h*a/p)). The table has n/a cells, a = 3/4
// by default (d = 4, h = 8 overflow very rarely at that load). At a given
// memory the cell count stays n/a and f takes the bits left (at least 2;
// if even that does not fit, the load rises; if more than a 32-bit cell is
// left, the cells become 32 bits wide and more numerous, the load falls).
//
// A Filter is not safe for concurrent use.
package fcf

import (
	"errors"
	"fmt"
	"github.com/flowmon/flowmon/acsm/backend"
	"math"
	"math/bits"

	"github.com/flowmon/flowmon/acsm/internal/packed"
	"github.com/flowmon/flowmon/internal/hashmix"
)

// Sentinel errors.
var (
	ErrOptions  = errors.New("fcf: invalid options")
	ErrFull     = errors.New("fcf: buckets full")
	ErrNotFound = errors.New("fcf: key not found")
	ErrMismatch = errors.New("fcf: no matching cell holds the stated value")
)

// Options sizes a Filter.
type Options struct {
	Capacity    int     // expected keys n
	FPRate      float64 // target false-positive rate p (ignored when MemoryBytes is set)
	MemoryBytes int     // if > 0, the table's size in bytes
	Values      int     // states are 0..Values-1
	Subtables   int     // d (0 means 4)
	BucketCells int     // h (0 means 8)
	Load        float64 // target load a (0 means 0.75)
	Seed        uint64
}

// Validate checks the options.
func (o Options) Validate() error {
	var errs []error
	if o.Capacity < 1 {
		errs = append(errs, fmt.Errorf("%w: capacity %d must be >= 1", ErrOptions, o.Capacity))
	}
	if o.MemoryBytes <= 0 && !(o.FPRate > 0 && o.FPRate < 1) {
		errs = append(errs, fmt.Errorf("%w: false-positive rate %g must be in (0, 1)", ErrOptions, o.FPRate))
	}
	if o.Values < 1 || o.Values > 1<<16 {
		errs = append(errs, fmt.Errorf("%w: values %d must be in [1, 2^16]", ErrOptions, o.Values))
	}
	if o.Subtables < 0 || o.Subtables > 16 || o.BucketCells < 0 || o.BucketCells > 64 {
		errs = append(errs, fmt.Errorf("%w: %d subtables of %d-cell buckets: want <= 16 and <= 64", ErrOptions, o.Subtables, o.BucketCells))
	}
	if o.Load < 0 || o.Load > 1 {
		errs = append(errs, fmt.Errorf("%w: load %g must be in (0, 1]", ErrOptions, o.Load))
	}
	return errors.Join(errs...)
}

// Filter is a fingerprint-compressed filter.
type Filter struct {
	cells   packed.Array
	d, h    int
	buckets int // B, per subtable
	fbits   uint
	sbits   uint
	seed    uint64
	stats   Stats
}

// Stats are the filter's counters.
type Stats struct {
	Inserts, Overflows, Updates, Deletes, DontKnow, Mismatches uint64
}

// New builds a Filter.
func New(o Options) (*Filter, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("new fcf: %w", err)
	}
	if o.Subtables == 0 {
		o.Subtables = 4
	}
	if o.BucketCells == 0 {
		o.BucketCells = 8
	}
	if o.Load == 0 {
		o.Load = 0.75
	}
	d, h := o.Subtables, o.BucketCells
	sb := uint(bits.Len(uint(o.Values - 1)))
	if sb == 0 {
		sb = 1
	}
	cells := int(math.Ceil(float64(o.Capacity) / o.Load))
	var fb uint
	if o.MemoryBytes > 0 {
		totalBits := int64(o.MemoryBytes) * 8
		per := totalBits / int64(cells)
		if per < int64(sb)+2 {
			per = int64(sb) + 2
			cells = int(totalBits / per)
		}
		if per > 32 {
			// Wider than a cell can use: spend the bytes on more cells
			// (a lower load) instead.
			per = 32
			cells = int(totalBits / per)
		}
		fb = uint(per - int64(sb))
	} else {
		fb = uint(math.Ceil(math.Log2(float64(d*h) * o.Load / o.FPRate)))
		fb = max(2, min(fb, 32-sb))
	}
	b := max(1, cells/(d*h))
	return &Filter{
		cells: packed.New(b*d*h, fb+sb),
		d:     d, h: h, buckets: b,
		fbits: fb, sbits: sb, seed: o.Seed,
	}, nil
}

// FingerprintBits is f.
func (f *Filter) FingerprintBits() int { return int(f.fbits) }

// Cells is the number of cells.
func (f *Filter) Cells() int { return f.cells.Len() }

// locate returns the fingerprint and the first cell of h's bucket in each
// subtable.
func (f *Filter) locate(h uint64, first *[16]int) uint32 {
	h1, h2 := hashmix.Pair(h, f.seed)
	for i := 0; i < f.d; i++ {
		b := int(hashmix.Reduce(h1+uint64(i)*h2, uint64(f.buckets)))
		first[i] = (i*f.buckets + b) * f.h
	}
	fp := uint32(hashmix.Mix(h2) >> (64 - f.fbits))
	if fp == 0 {
		fp = 1
	}
	return fp
}

func (f *Filter) split(c uint32) (fp, v uint32) { return c >> f.sbits, c & (1<<f.sbits - 1) }

// Insert adds h with value v.
func (f *Filter) Insert(h uint64, v uint32) error {
	var first [16]int
	fp := f.locate(h, &first)
	best, bestLoad := -1, f.h+1
	for i := 0; i < f.d; i++ {
		load, free := 0, -1
		for j := 0; j < f.h; j++ {
			if c := f.cells.Get(first[i] + j); c>>f.sbits != 0 {
				load++
			} else if free < 0 {
				free = first[i] + j
			}
		}
		if free >= 0 && load < bestLoad {
			best, bestLoad = free, load
		}
	}
	if best < 0 {
		f.stats.Overflows++
		return ErrFull
	}
	f.cells.Set(best, fp<<f.sbits|v)
	f.stats.Inserts++
	return nil
}

// match finds the cells of h matching its fingerprint: it returns how many
// there are, one of them, and one holding value want (or -1).
func (f *Filter) match(h uint64, want uint32) (n, any, withWant int, v uint32) {
	var first [16]int
	fp := f.locate(h, &first)
	any, withWant = -1, -1
	for i := 0; i < f.d; i++ {
		for j := 0; j < f.h; j++ {
			c := first[i] + j
			cfp, cv := f.split(f.cells.Get(c))
			if cfp != fp {
				continue
			}
			n++
			any, v = c, cv
			if cv == want && withWant < 0 {
				withWant = c
			}
		}
	}
	return n, any, withWant, v
}

// Query looks h up.
func (f *Filter) Query(h uint64) (uint32, backend.Result) {
	n, _, _, v := f.match(h, math.MaxUint32)
	switch {
	case n == 0:
		return 0, backend.Absent
	case n > 1:
		f.stats.DontKnow++
		return 0, backend.Unknown
	}
	return v, backend.Found
}

func (f *Filter) pick(h uint64, old uint32) (int, error) {
	n, any, with, _ := f.match(h, old)
	switch {
	case with >= 0:
		return with, nil
	case n == 1:
		return any, nil
	case n == 0:
		return -1, ErrNotFound
	}
	f.stats.Mismatches++
	return -1, ErrMismatch
}

// Update changes h's value from old to nv.
func (f *Filter) Update(h uint64, old, nv uint32) error {
	c, err := f.pick(h, old)
	if err != nil {
		return err
	}
	fp, _ := f.split(f.cells.Get(c))
	f.cells.Set(c, fp<<f.sbits|nv)
	f.stats.Updates++
	return nil
}

// Delete removes h (stored with value v).
func (f *Filter) Delete(h uint64, v uint32) error {
	c, err := f.pick(h, v)
	if err != nil {
		return err
	}
	f.cells.Set(c, 0)
	f.stats.Deletes++
	return nil
}

// Reset empties the table.
func (f *Filter) Reset() { f.cells.Clear() }

// MemoryBytes is the table's size.
func (f *Filter) MemoryBytes() int { return f.cells.Bytes() }

// Stats returns the counters.
func (f *Filter) Stats() Stats { return f.stats }
