package kbf

import (
	"errors"
	"fmt"
	"math"
)

// Sentinel errors. Every error returned by the package wraps one of them.
var (
	// ErrInvalidOptions reports an Options value that Validate rejects.
	ErrInvalidOptions = errors.New("kbf: invalid options")
	// ErrValueRange reports a value outside [0, Options.Values).
	ErrValueRange = errors.New("kbf: value out of range")
	// ErrNotFound reports a delete or update of a key that is not stored
	// (one of its cells is empty).
	ErrNotFound = errors.New("kbf: key not found")
	// ErrMismatch reports a delete or update whose stated value is not
	// consistent with the key's cells (the key does not hold that value).
	ErrMismatch = errors.New("kbf: value does not match the key's cells")
	// ErrUndecodable reports an update (Alg. 5 form) of a key whose current
	// value cannot be decoded.
	ErrUndecodable = errors.New("kbf: value undecodable")
	// ErrIncompatible reports a merge of filters of different shapes.
	ErrIncompatible = errors.New("kbf: incompatible filters")
	// ErrFormat reports bytes that are not a valid marshalled filter.
	ErrFormat = errors.New("kbf: bad binary format")
)

// EncoderKind selects how values are turned into XOR-superimposable codes.
type EncoderKind uint8

const (
	// Greedy is the paper's Algorithm 1 (Section III-C): codes found by a
	// greedy search so that all codes and all pairwise XORs are distinct.
	Greedy EncoderKind = iota
	// Sidon uses the algebraic codes (x, x^3), x in GF(2^q)\{0}, which reach
	// the counting bound and decode a pair of superimposed codes directly.
	Sidon
)

func (e EncoderKind) String() string {
	switch e {
	case Greedy:
		return "greedy"
	case Sidon:
		return "sidon"
	}
	return fmt.Sprintf("EncoderKind(%d)", uint8(e))
}

// ParseEncoder returns the encoder named s (its String).
func ParseEncoder(s string) (EncoderKind, error) {
	for e := Greedy; e <= Sidon; e++ {
		if e.String() == s {
			return e, nil
		}
	}
	return 0, fmt.Errorf("%w: encoder %q (want greedy or sidon)", ErrInvalidOptions, s)
}

// LayoutKind selects where a key's k cells live.
type LayoutKind uint8

const (
	// Standard spreads the k cells over the whole array by double hashing
	// (the paper's layout): up to k cache misses per operation.
	Standard LayoutKind = iota
	// Blocked puts the k cells in one or a few 64-byte cache lines.
	Blocked
)

func (l LayoutKind) String() string {
	switch l {
	case Standard:
		return "standard"
	case Blocked:
		return "blocked"
	}
	return fmt.Sprintf("LayoutKind(%d)", uint8(l))
}

// ParseLayout returns the layout named s (its String).
func ParseLayout(s string) (LayoutKind, error) {
	for l := Standard; l <= Blocked; l++ {
		if l.String() == s {
			return l, nil
		}
	}
	return 0, fmt.Errorf("%w: layout %q (want standard or blocked)", ErrInvalidOptions, s)
}

// Limits on options.
const (
	// MaxK is the largest number of cells per key (p >= 2^-32 needs k <= 32).
	MaxK = 32
	// MaxGreedyValues bounds Values for the Greedy encoder, whose search
	// costs time and a bitmap of 2^P bits (P = code bits).
	MaxGreedyValues = 4096
	// MaxSidonValues bounds Values for the Sidon encoder (q <= 14).
	MaxSidonValues = 1<<14 - 1
	// MaxCells bounds the cell array (2^36 cells, 256 GiB at 32-bit cells).
	MaxCells = 1 << 36
)

// Options sizes a Filter from the figures a user knows.
type Options struct {
	// Capacity is the expected number of keys n.
	Capacity int
	// FPRate is the target false-positive rate p; with Capacity it sizes the
	// filter: m = -n ln p / (ln 2)^2 cells and k = round(-ln p / ln 2)
	// (Section IV).
	FPRate float64
	// Values is the number of distinct values stored (values are 0..Values-1).
	Values int
	// CellBits is the cell width, 16 or 32 (0 means 32).
	CellBits int
	// CounterBits is the counter width inside a cell, 2..8 (0 means 3).
	CounterBits int
	// Encoder selects the codes (Greedy by default).
	Encoder EncoderKind
	// Layout selects the cell placement (Standard by default).
	Layout LayoutKind
	// BlockLines is the number of 64-byte lines a key's cells use in the
	// Blocked layout, 1..4; 0 means max(3, ceil(2k/L)) for L cells a line.
	// It must give at least k cells (BlockLines * L >= k).
	BlockLines int
	// SizeFactor scales the cell count m (0 means 1): 0.5 builds the paper's
	// overloaded m/2 filters, 1.25 a blocked filter with 25% more memory.
	SizeFactor float64
	// Seed perturbs the cell hashes. Filters merged or chained share it.
	Seed uint64
}

func (o Options) withDefaults() Options {
	if o.CellBits == 0 {
		o.CellBits = 32
	}
	if o.CounterBits == 0 {
		o.CounterBits = 3
	}
	if o.SizeFactor == 0 {
		o.SizeFactor = 1
	}
	return o
}

// Validate checks the options and reports every problem it finds.
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, a...)...))
	}
	if o.Capacity < 1 {
		bad("capacity %d must be >= 1", o.Capacity)
	}
	if !(o.FPRate > 0x1p-32 && o.FPRate < 1) {
		bad("false-positive rate %g must be in (2^-32, 1)", o.FPRate)
	}
	if o.CellBits != 16 && o.CellBits != 32 {
		bad("cell bits %d must be 16 or 32", o.CellBits)
	}
	if o.CounterBits < 2 || o.CounterBits > 8 {
		bad("counter bits %d must be in [2, 8]", o.CounterBits)
	}
	if !(o.SizeFactor > 0 && o.SizeFactor <= 64) {
		bad("size factor %g must be in (0, 64]", o.SizeFactor)
	}
	if o.BlockLines < 0 || o.BlockLines > 4 {
		bad("block lines %d must be in [0, 4]", o.BlockLines)
	}
	if o.Layout > Blocked {
		bad("unknown layout %d", o.Layout)
	}
	switch o.Encoder {
	case Greedy:
		if o.Values < 1 || o.Values > MaxGreedyValues {
			bad("values %d must be in [1, %d] for the greedy encoder", o.Values, MaxGreedyValues)
		}
	case Sidon:
		if o.Values < 1 || o.Values > MaxSidonValues {
			bad("values %d must be in [1, %d] for the sidon encoder", o.Values, MaxSidonValues)
		}
	default:
		bad("unknown encoder %d", o.Encoder)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if s := o.Encoder; s == Sidon {
		q := sidonDegree(o.Values)
		if eb := o.CellBits - o.CounterBits; 2*q > eb {
			bad("%d values need %d sidon code bits, a %d-bit cell with a %d-bit counter has %d",
				o.Values, 2*q, o.CellBits, o.CounterBits, eb)
		}
	}
	if _, k, err := o.shape(); err != nil {
		errs = append(errs, err)
	} else if o.Layout == Blocked && o.BlockLines > 0 && o.BlockLines*lineCells(o.CellBits) < k {
		bad("%d lines of %d cells cannot hold k = %d cells", o.BlockLines, lineCells(o.CellBits), k)
	}
	return errors.Join(errs...)
}

// shape returns the number of cells m and of hash functions k (Section IV),
// without allocating. m is rounded to a prime (Standard) or to a prime
// number of cache lines (Blocked) so that double hashing gives k distinct
// cells.
func (o Options) shape() (m, k int, err error) {
	k = OptimalK(o.FPRate)
	if k < 1 {
		k = 1
	}
	if k > MaxK {
		k = MaxK
	}
	raw := CellsFor(o.Capacity, o.FPRate) * o.SizeFactor
	if raw < float64(k) {
		raw = float64(k)
	}
	if raw > MaxCells {
		return 0, 0, fmt.Errorf("%w: %g cells exceed the limit %d", ErrInvalidOptions, raw, int64(MaxCells))
	}
	switch o.Layout {
	case Blocked:
		per := lineCells(o.CellBits)
		// at least 5 lines, so that the up to 4 lines of a key differ
		lines := nextPrime(uint64(math.Max(math.Ceil(raw/float64(per)), 5)))
		m = int(lines) * per
	default:
		m = int(nextPrime(uint64(math.Ceil(raw))))
		if m < k+1 {
			m = int(nextPrime(uint64(k + 1)))
		}
	}
	return m, k, nil
}

// lineCells is the number of cells in a 64-byte cache line.
func lineCells(cellBits int) int { return 512 / cellBits }

func nextPrime(n uint64) uint64 {
	if n <= 2 {
		return 2
	}
	if n%2 == 0 {
		n++
	}
	for ; ; n += 2 {
		if isPrime(n) {
			return n
		}
	}
}

func isPrime(n uint64) bool {
	if n < 2 {
		return false
	}
	for d := uint64(2); d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}
