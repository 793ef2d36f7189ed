package cbf

import (
	"errors"
	"fmt"
	"github.com/flowmon/flowmon/internal/hashmix"
	"math"
)

// Sentinel errors.
var (
	ErrInvalidOptions = errors.New("cbf: invalid options")
	ErrIncompatible   = errors.New("cbf: incompatible filters")
	ErrCorrupt        = errors.New("cbf: corrupt encoding")
)

// Limits.
const (
	MaxHashes = 32
	MaxCells  = 1 << 36
)

// Options sizes a Filter. Zero fields take defaults: CounterBits 8, and
// Cells/Hashes from Capacity and FPRate (default 0.01).
type Options struct {
	Capacity    uint64  // distinct elements expected
	FPRate      float64 // target false-positive rate of Count on absent keys
	Cells       uint64  // m, overrides Capacity/FPRate
	Hashes      int     // k, default round((m/n) ln 2), at least 1
	CounterBits int     // c: 4, 8, 16 or 32
	Seed        uint64
}

func (o Options) withDefaults() Options {
	if o.CounterBits == 0 {
		o.CounterBits = 8
	}
	if o.FPRate == 0 {
		o.FPRate = 0.01
	}
	if o.Cells == 0 && o.Capacity > 0 && o.FPRate > 0 && o.FPRate < 1 {
		m := math.Ceil(-float64(o.Capacity) * math.Log(o.FPRate) / (math.Ln2 * math.Ln2))
		o.Cells = uint64(min(m, MaxCells+1))
	}
	if o.Hashes == 0 && o.Cells > 0 {
		n := max(o.Capacity, 1)
		o.Hashes = max(1, int(math.Round(float64(o.Cells)/float64(n)*math.Ln2)))
		o.Hashes = min(o.Hashes, MaxHashes)
	}
	return o
}

// Validate reports every problem with o, joined.
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, a...)...))
	}
	if o.FPRate <= 0 || o.FPRate >= 1 || math.IsNaN(o.FPRate) {
		bad("false-positive rate %v must be in (0, 1)", o.FPRate)
	}
	if o.Cells == 0 || o.Cells > MaxCells {
		bad("%d cells must be in [1, %d] (set capacity or cells)", o.Cells, uint64(MaxCells))
	}
	if o.Hashes < 1 || o.Hashes > MaxHashes {
		bad("hashes %d must be in [1, %d]", o.Hashes, MaxHashes)
	}
	switch o.CounterBits {
	case 4, 8, 16, 32:
	default:
		bad("counter bits %d must be 4, 8, 16 or 32", o.CounterBits)
	}
	return errors.Join(errs...)
}

// Filter is a counting Bloom filter of 64-bit key hashes.
type Filter struct {
	opts        Options
	words       []uint64
	c, perWord  uint   // counter bits, counters per word
	cMax        uint64 // saturated counter
	distinct    uint64 // Add calls that found the key absent
	saturations uint64
}

// New returns an empty filter sized by o.
func New(o Options) (*Filter, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("new counting bloom filter: %w", err)
	}
	o = o.withDefaults()
	f := &Filter{opts: o, c: uint(o.CounterBits)}
	f.perWord = 64 / f.c
	f.cMax = 1<<f.c - 1
	f.words = make([]uint64, (o.Cells+uint64(f.perWord)-1)/uint64(f.perWord))
	return f, nil
}

// Options returns the options with every default filled in.
func (f *Filter) Options() Options { return f.opts }

// hashes returns h1, h2 of Eq. 12 (h2 odd, so the k cells differ when m
// is a power of two).
func (f *Filter) hashes(key uint64) (uint64, uint64) {
	return hashmix.Pair(key, f.opts.Seed)
}

func (f *Filter) cell(h uint64) (w uint64, sh uint) {
	i := hashmix.Reduce(h, f.opts.Cells)
	return i / uint64(f.perWord), uint(i%uint64(f.perWord)) * f.c
}

func (f *Filter) get(w uint64, sh uint) uint64 { return f.words[w] >> sh & f.cMax }

func (f *Filter) put(w uint64, sh uint, v uint64) {
	f.words[w] = f.words[w]&^(f.cMax<<sh) | v<<sh
}

// Add adds n occurrences of key and returns its new Count.
func (f *Filter) Add(key, n uint64) uint64 {
	if n == 0 {
		return f.Count(key)
	}
	h1, h2 := f.hashes(key)
	least := f.cMax
	sat, absent := false, false
	for i := range uint64(f.opts.Hashes) {
		w, sh := f.cell(h1 + i*h2)
		v := f.get(w, sh)
		absent = absent || v == 0
		if n > f.cMax-v {
			sat = true
			v = f.cMax
		} else {
			v += n
		}
		f.put(w, sh, v)
		least = min(least, v)
	}
	if sat {
		f.saturations++
	}
	if absent {
		f.distinct++
	}
	return least
}

// Remove removes n occurrences of key (cells floor at 0; saturated cells
// are left saturated) and returns its new Count.
func (f *Filter) Remove(key, n uint64) uint64 {
	h1, h2 := f.hashes(key)
	least := f.cMax
	for i := range uint64(f.opts.Hashes) {
		w, sh := f.cell(h1 + i*h2)
		v := f.get(w, sh)
		if v != f.cMax {
			v -= min(v, n)
			f.put(w, sh, v)
		}
		least = min(least, v)
	}
	return least
}

// Count returns the smallest of key's k cells: at least key's multiplicity.
func (f *Filter) Count(key uint64) uint64 {
	h1, h2 := f.hashes(key)
	least := f.cMax
	for i := range uint64(f.opts.Hashes) {
		w, sh := f.cell(h1 + i*h2)
		if v := f.get(w, sh); v < least {
			if v == 0 {
				return 0
			}
			least = v
		}
	}
	return least
}

// Test reports whether Count(key) > 0.
func (f *Filter) Test(key uint64) bool { return f.Count(key) != 0 }

// Stats describes a filter.
type Stats struct {
	Cells, Hashes int64
	Distinct      uint64 // Add calls on keys that tested absent
	Saturations   uint64
	Bits          uint64 // cells * counter bits: the paper's space
	Bytes         uint64
}

// Stats returns f's statistics.
func (f *Filter) Stats() Stats {
	return Stats{
		Cells: int64(f.opts.Cells), Hashes: int64(f.opts.Hashes), Distinct: f.distinct,
		Saturations: f.saturations, Bits: f.opts.Cells * uint64(f.c), Bytes: uint64(len(f.words)) * 8,
	}
}

// FalsePositiveRate returns (1 - e^{-kn/m})^k for n distinct elements
// (Eq. 2): the probability that Count of an absent key is not zero.
func (f *Filter) FalsePositiveRate(n uint64) float64 {
	k, m := float64(f.opts.Hashes), float64(f.opts.Cells)
	return math.Pow(1-math.Exp(-k*float64(n)/m), k)
}

// Subtract lowers every cell of f by the same cell of g, flooring at 0
// (the CBF difference of Guo and Luo): afterwards Count(key) > 0 suggests
// key has more occurrences in f than in g.
func (f *Filter) Subtract(g *Filter) error {
	if f.opts.Cells != g.opts.Cells || f.opts.Hashes != g.opts.Hashes || f.c != g.c || f.opts.Seed != g.opts.Seed {
		return fmt.Errorf("subtract counting bloom filters: %w", ErrIncompatible)
	}
	for i := range f.opts.Cells {
		w, sh := i/uint64(f.perWord), uint(i%uint64(f.perWord))*f.c
		a, b := f.get(w, sh), g.get(w, sh)
		f.put(w, sh, a-min(a, b))
	}
	return nil
}

// Clone returns a copy of f.
func (f *Filter) Clone() *Filter {
	g := *f
	g.words = append([]uint64(nil), f.words...)
	return &g
}
