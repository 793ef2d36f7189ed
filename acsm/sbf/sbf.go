// Package sbf is the stateful Bloom filter of Bonomi, Mitzenmacher,
// Panigrahy, Singh and Varghese, "Beyond Bloom Filters: From Approximate
// Membership Checks to Approximate State Machines" (SIGCOMM 2006, Section
// 3), the baseline the kBF paper calls sBF in its Section VI.
//
// # Structure
//
// An array of m cells, each a counter of c bits and a value field. A key
// hashes to k distinct cells, one in each of k equal parts of the array
// (double hashing of its 64-bit hash; a partitioned Bloom filter, whose
// false-positive rate is the classic one to first order). The value field
// holds 0 (empty), v+1 for a value v, or DK ("don't know").
//
//   - Insert(x, v): every cell's count goes up by one; an empty value field
//     takes v+1; a field holding a different value becomes DK.
//   - Lookup(x): a cell with count 0 means x is absent. Otherwise the
//     non-DK fields must agree on a value, which is returned; if all fields
//     are DK, or two disagree, the answer is "don't know".
//   - Modify(x, v -> w): a cell whose count is 1 belongs to x alone and
//     takes w+1; any other cell becomes DK.
//   - Delete(x, v): every count goes down by one; a cell whose count
//     reaches 0 is emptied. A DK field stays DK while its count is above
//     0: the information lost by a collision is not recovered when the
//     colliding flow leaves. This is why the sBF's false negatives do not
//     fall as the filter grows (kBF paper, Section VI).
//
// Counters saturate at 2^c - 1 and then stay there (never decremented), as
// in a counting Bloom filter.
//
// # Sizing
//
// From n keys and a target false-positive rate p: m = -n ln p / (ln 2)^2
// cells and k = round((m/n) ln 2), the Bloom filter optimum; or, for
// comparisons at equal memory, m = 8*MemoryBytes / (c + b) with b the value
// field's width. A Filter is not safe for concurrent use.
package sbf

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
	ErrOptions  = errors.New("sbf: invalid options")
	ErrNotFound = errors.New("sbf: key not found")
)

// Options sizes a Filter.
type Options struct {
	Capacity    int     // expected keys n
	FPRate      float64 // target false-positive rate p (ignored when MemoryBytes is set)
	MemoryBytes int     // if > 0, the cell array's size in bytes
	Values      int     // values are 0..Values-1
	CounterBits int     // counter width c, 2..8 (0 means 4)
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
	if o.Values < 1 || o.Values > 1<<20 {
		errs = append(errs, fmt.Errorf("%w: values %d must be in [1, 2^20]", ErrOptions, o.Values))
	}
	if o.CounterBits != 0 && (o.CounterBits < 2 || o.CounterBits > 8) {
		errs = append(errs, fmt.Errorf("%w: counter bits %d must be in [2, 8]", ErrOptions, o.CounterBits))
	}
	return errors.Join(errs...)
}

// Filter is a stateful Bloom filter.
type Filter struct {
	counts packed.Array
	vals   packed.Array
	m, k   int
	maxC   uint32
	dk     uint32 // the DK code
	seed   uint64
	stats  Stats
}

// Stats are the filter's counters.
type Stats struct {
	Inserts, Updates, Deletes, DontKnow, Mismatches uint64
}

// New builds a Filter.
func New(o Options) (*Filter, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("new sbf: %w", err)
	}
	if o.CounterBits == 0 {
		o.CounterBits = 4
	}
	vb := uint(bits.Len(uint(o.Values + 1))) // codes 0..Values+1
	var m int
	if o.MemoryBytes > 0 {
		m = int(int64(o.MemoryBytes) * 8 / int64(uint(o.CounterBits)+vb))
	} else {
		m = int(math.Ceil(-float64(o.Capacity) * math.Log(o.FPRate) / (math.Ln2 * math.Ln2)))
	}
	if m < 1 {
		m = 1
	}
	k := int(math.Round(float64(m) / float64(o.Capacity) * math.Ln2))
	k = max(1, min(k, 32, m))
	return &Filter{
		counts: packed.New(m, uint(o.CounterBits)),
		vals:   packed.New(m, vb),
		m:      m, k: k,
		maxC: 1<<uint(o.CounterBits) - 1,
		dk:   uint32(o.Values + 1),
		seed: o.Seed,
	}, nil
}

// K is the number of cells per key; M the number of cells.
func (f *Filter) K() int { return f.k }

// M is the number of cells.
func (f *Filter) M() int { return f.m }

// cell is the i-th of a key's k cells. The array is cut into k parts of
// m/k cells and cell i lies in part i (a partitioned Bloom filter), so a
// key's cells are distinct: with double hashing over the whole array a key
// can hit one cell twice, and Modify then makes that cell "don't know"
// for the key itself.
func (f *Filter) cell(h1, h2 uint64, i int) int {
	part := f.m / f.k
	return i*part + int(hashmix.Reduce(h1+uint64(i)*h2, uint64(part)))
}

// Insert adds key h with value v.
func (f *Filter) Insert(h uint64, v uint32) {
	h1, h2 := hashmix.Pair(h, f.seed)
	code := v + 1
	for i := 0; i < f.k; i++ {
		c := f.cell(h1, h2, i)
		n := f.counts.Get(c)
		if n < f.maxC {
			f.counts.Set(c, n+1)
		}
		switch x := f.vals.Get(c); {
		case x == 0 || n == 0:
			f.vals.Set(c, code)
		case x != code:
			f.vals.Set(c, f.dk)
		}
	}
	f.stats.Inserts++
}

// Query looks h up.
func (f *Filter) Query(h uint64) (uint32, backend.Result) {
	h1, h2 := hashmix.Pair(h, f.seed)
	var got uint32
	conflict := false
	for i := 0; i < f.k; i++ {
		c := f.cell(h1, h2, i)
		if f.counts.Get(c) == 0 {
			return 0, backend.Absent
		}
		x := f.vals.Get(c)
		switch {
		case x == f.dk || x == 0:
		case got == 0:
			got = x
		case got != x:
			conflict = true
		}
	}
	if got == 0 || conflict {
		f.stats.DontKnow++
		return 0, backend.Unknown
	}
	return got - 1, backend.Found
}

// present reports whether every cell of h has a nonzero count.
func (f *Filter) present(h1, h2 uint64) bool {
	for i := 0; i < f.k; i++ {
		if f.counts.Get(f.cell(h1, h2, i)) == 0 {
			return false
		}
	}
	return true
}

// Update changes h's value to nv: cells owned by h alone (count 1) take
// the new value, shared cells become DK.
func (f *Filter) Update(h uint64, old, nv uint32) error {
	h1, h2 := hashmix.Pair(h, f.seed)
	if !f.present(h1, h2) {
		return ErrNotFound
	}
	for i := 0; i < f.k; i++ {
		c := f.cell(h1, h2, i)
		if f.counts.Get(c) == 1 {
			f.vals.Set(c, nv+1)
		} else if f.vals.Get(c) != nv+1 {
			f.vals.Set(c, f.dk)
		}
	}
	f.stats.Updates++
	return nil
}

// Delete removes h (stored with value v).
func (f *Filter) Delete(h uint64, v uint32) error {
	h1, h2 := hashmix.Pair(h, f.seed)
	if !f.present(h1, h2) {
		return ErrNotFound
	}
	for i := 0; i < f.k; i++ {
		c := f.cell(h1, h2, i)
		n := f.counts.Get(c)
		if n == f.maxC {
			continue // saturated: sticky
		}
		n--
		f.counts.Set(c, n)
		if n == 0 {
			f.vals.Set(c, 0)
		}
	}
	f.stats.Deletes++
	return nil
}

// Reset empties the filter.
func (f *Filter) Reset() {
	f.counts.Clear()
	f.vals.Clear()
}

// MemoryBytes is the size of the cell arrays.
func (f *Filter) MemoryBytes() int { return f.counts.Bytes() + f.vals.Bytes() }

// Stats returns the counters.
func (f *Filter) Stats() Stats { return f.stats }
