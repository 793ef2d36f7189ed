package kbf

import (
	"fmt"
	"github.com/flowmon/flowmon/internal/hashmix"
	"github.com/flowmon/flowmon/internal/memhint"
	"sync"
	"unsafe"
)

// Result is the outcome of a query.
type Result uint8

const (
	// Absent: the key is not stored (an empty cell, or cells that cannot
	// hold the key's code).
	Absent Result = iota
	// Found: the returned value was decoded.
	Found
	// Unknown: the key's cells are occupied but undecodable ("don't know").
	Unknown
)

func (r Result) String() string {
	switch r {
	case Absent:
		return "absent"
	case Found:
		return "found"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("Result(%d)", uint8(r))
}

// Stats counts operations and cell conditions.
type Stats struct {
	Inserts, Deletes, Updates, Queries uint64
	// Keys is the number of keys currently stored (inserts - deletes).
	Keys uint64
	// Found, AbsentAnswers and Unknown split the query answers.
	Found, AbsentAnswers, Unknown uint64
	// Saturated is the number of cells whose counter reached its maximum
	// and became sticky (never decremented, never trusted by a decode).
	Saturated uint64
	// Rejected counts deletes and updates refused (absent key or mismatch).
	Rejected uint64
}

// Filter is a key-value Bloom filter. It is not safe for concurrent use:
// one goroutine owns it (flowmon gives each worker its own).
type Filter struct {
	opt      Options // with defaults
	m, k     int
	enc      encoder
	sid      *sidonEncoder  // enc when it is Sidon: direct, inlinable calls
	gr       *greedyEncoder // enc when it is Greedy
	ctrBits  uint
	ctrMask  uint32 // low counter bits of a cell
	ctrMax   uint32 // saturated (sticky) counter
	encMask  uint32 // code bits after shifting out the counter
	c32      []uint32
	c16      []uint16
	seed     uint64
	lines    uint64     // blocked layout: number of cache lines (prime)
	perLine  int        // blocked: cells per line (power of two)
	groups   int        // blocked: lines per key
	firsts   [5]int     // blocked: where each line's first cell is in locate's output, then k
	capacity int        // p-capacity of m cells
	rules    [256]uint8 // by counter: which test consistent applies (fastpath.go)
	byLines  bool       // queries go a line at a time (lines.go)
	lp       lineParams
	subsets  [4]*[permCount]uint16 // blocked: the key's cells in each of its lines, by permutation
	st       Stats
}

type codebookKey struct {
	kind          EncoderKind
	values, width int
}

var codebooks sync.Map // codebookKey -> encoder; codes are deterministic and read-only

func codebook(kind EncoderKind, values, width int) (encoder, error) {
	key := codebookKey{kind, values, width}
	if e, ok := codebooks.Load(key); ok {
		return e.(encoder), nil
	}
	var e encoder
	var err error
	if kind == Sidon {
		e, err = newSidon(values, width)
	} else {
		e, err = newGreedy(values, width)
	}
	if err != nil {
		return nil, fmt.Errorf("building %s codes for %d values in %d bits: %w", kind, values, width, err)
	}
	act, _ := codebooks.LoadOrStore(key, e)
	return act.(encoder), nil
}

// New builds a filter sized by o (Section IV).
func New(o Options) (*Filter, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	m, k, err := o.shape()
	if err != nil {
		return nil, err
	}
	enc, err := codebook(o.Encoder, o.Values, o.CellBits-o.CounterBits)
	if err != nil {
		return nil, err
	}
	f := &Filter{
		opt: o, m: m, k: k, enc: enc, seed: o.Seed,
		ctrBits: uint(o.CounterBits),
		ctrMask: 1<<o.CounterBits - 1,
		ctrMax:  1<<o.CounterBits - 1,
		encMask: 1<<(o.CellBits-o.CounterBits) - 1,
	}
	f.setRules()
	f.sid, _ = enc.(*sidonEncoder)
	f.gr, _ = enc.(*greedyEncoder)
	f.capacity = PCapacity(m, o.FPRate)
	if o.Layout == Blocked {
		f.perLine = lineCells(o.CellBits)
		f.lines = uint64(m / f.perLine)
		f.groups = blockGroups(k, f.perLine)
		if o.BlockLines > 0 {
			f.groups = o.BlockLines
		}
		j := 0
		for g := 0; g < f.groups; g++ { // the k cells split evenly, earlier lines fewer
			f.firsts[g] = j
			j += (k - j) / (f.groups - g)
		}
		f.firsts[f.groups] = k
	}
	if o.CellBits == 16 {
		f.c16 = alignedU16(m)
	} else {
		f.c32 = alignedU32(m)
	}
	f.setLineParams()
	return f, nil
}

// blockGroups is the number of cache lines a key's k cells are split over
// in the blocked layout by default: at least three, enough that a key takes
// at most half of each line, at most four. At n = 1e6, p = 1e-3
// (docs/results/kbf.md) three lines leave no don't-know answers at the
// same memory, as the standard layout; two lines leave 4e-6, and with 25%
// more cells (SizeFactor 1.25) none at 1M keys and 5e-7 at 10M, for a
// batched query a little faster than three lines in the line form
// (docs/results/kbf-layouts.md). One line leaves far more even with 50%
// more cells (docs/results/kbf-layouts.md, "One line per key").
func blockGroups(k, perLine int) int {
	g := (2*k + perLine - 1) / perLine
	return min(max(g, 3), 4, k)
}

// alignedU32 returns a zeroed slice whose first element starts a cache line.
func alignedU32(n int) []uint32 {
	s := make([]uint32, n+16)
	memhint.AdviseHugePages(unsafe.Pointer(&s[0]), 4*len(s))
	off := int(uintptr(unsafe.Pointer(&s[0]))&63) / 4
	if off != 0 {
		off = 16 - off
	}
	return s[off : off+n : off+n]
}

func alignedU16(n int) []uint16 {
	s := make([]uint16, n+32)
	memhint.AdviseHugePages(unsafe.Pointer(&s[0]), 2*len(s))
	off := int(uintptr(unsafe.Pointer(&s[0]))&63) / 2
	if off != 0 {
		off = 32 - off
	}
	return s[off : off+n : off+n]
}

// Options returns the options the filter was built with (defaults filled).
func (f *Filter) Options() Options { return f.opt }

// Cells is m, the number of cells; K the number of cells per key.
func (f *Filter) Cells() int { return f.m }

// K is the number of cells per key.
func (f *Filter) K() int { return f.k }

// Capacity is the p-capacity of the filter (Section IV).
func (f *Filter) Capacity() int { return f.capacity }

// BlockLines is the number of cache lines a key's cells use (Blocked), 0
// for Standard.
func (f *Filter) BlockLines() int { return f.groups }

// CodeBits is the width of the codes in use.
func (f *Filter) CodeBits() int { return f.enc.bits() }

// MemoryBytes is the size of the cell array. The codebook (shared by all
// filters with the same encoder and value count) is not included.
func (f *Filter) MemoryBytes() int { return f.m * f.opt.CellBits / 8 }

// CodebookBytes is the size of the shared code tables: for Greedy the code
// table and the two bitmaps over the 2^P code space (64 MiB at P = 28), for
// Sidon the field's log, antilog, cube and root tables and the fast path's
// table of high halves.
func (f *Filter) CodebookBytes() int {
	if f.gr != nil {
		return 4*len(f.gr.codes) + 8*(len(f.gr.codeSet)+len(f.gr.pairSet))
	}
	g := f.sid.f
	return 2*(len(g.exp)+len(g.log)+len(g.cube)+2*len(g.logP)+len(g.logT)+len(g.root)) + 4*len(g.solW[0])*2 + 4*len(f.sid.high)
}

// Reset empties the filter in place, as New left it: every cell zero
// (saturated ones included) and Stats zero, with the same shape, codes
// and seed. It allocates nothing and keeps the cell array's memory (and
// its huge pages), so a filter recycled at each aging rotation costs no
// allocation and no page faults.
func (f *Filter) Reset() {
	clear(f.c32)
	clear(f.c16)
	f.st = Stats{}
}

// Stats returns the counters.
func (f *Filter) Stats() Stats { return f.st }

func (f *Filter) cell(i int) uint32 {
	if f.c16 != nil {
		return uint32(f.c16[i])
	}
	return f.c32[i]
}

func (f *Filter) setCell(i int, w uint32) {
	if f.c16 != nil {
		f.c16[i] = uint16(w)
		return
	}
	f.c32[i] = w
}

// locate writes the key's k distinct cell indexes. The two hashes of double
// hashing are both derived from the 64-bit key: h1 = mix(key^seed), h2 =
// mix(h1). Standard: i_j = (a + j b) mod m with m prime and b in [1, m),
// so all k cells differ. Blocked: the k cells are split over g cache lines
// chosen the same way over the (prime) number of lines; inside a line the
// cells are a random subset (lineperm.go).
func (f *Filter) locate(key uint64, idx *[MaxK]int) {
	h1, h2 := f.keyHashes(key)
	if f.perLine == 0 {
		m := uint64(f.m)
		a := hashmix.Reduce(h1, m)
		b := 1 + hashmix.Reduce(h2, m-1)
		for j := 0; j < f.k; j++ {
			idx[j] = int(a)
			a += b
			if a >= m {
				a -= m
			}
		}
		return
	}
	L := uint64(f.perLine)
	line, step, h3 := f.blockHash(h1, h2)
	j := 0
	for g := 0; g < f.groups; g++ {
		cnt := f.firsts[g+1] - f.firsts[g] // (k - j) / (groups - g), precomputed
		base := line * L
		if L == 16 {
			p := linePerms[h3>>(permBits*g)&permMask]
			for c := 0; c < cnt; c++ {
				idx[j] = int(base + p&15)
				j++
				p >>= 4
			}
		} else { // 32 cells: the two halves in turn, a permutation each
			bits := h3 >> (2 * permBits * g)
			if g >= 3 {
				bits = hashmix.Mix(h3) // 6 x 10 bits used up
			}
			p := [2]uint64{linePerms[bits&permMask], linePerms[bits>>permBits&permMask]}
			for c := 0; c < cnt; c++ {
				half := c & 1
				idx[j] = int(base + uint64(16*half) + p[half]&15)
				j++
				p[half] >>= 4
			}
		}
		line = f.nextLine(line, step)
	}
}

// keyHashes are the two hashes of double hashing, both from the key.
func (f *Filter) keyHashes(key uint64) (h1, h2 uint64) {
	return hashmix.Split(key, f.seed)
}

// blockHash is the blocked layout's start from the key's two hashes: its
// first line, the step to the next (double hashing over the prime number
// of lines), and h3, whose bits pick the cells inside each line.
func (f *Filter) blockHash(h1, h2 uint64) (line, step, h3 uint64) {
	return hashmix.Reduce(h1, f.lines), 1 + hashmix.Reduce(h2, f.lines-1), hashmix.Mix(h2)
}

func (f *Filter) nextLine(line, step uint64) uint64 {
	line += step
	if line >= f.lines {
		line -= f.lines
	}
	return line
}

// Insert adds key with value v (Algorithm 2): each of the k cells gets its
// counter incremented and the value's code XORed in. A counter that reaches
// its maximum becomes sticky (see doc). Inserting a key twice stores it
// twice; the caller checks with Query first when that matters.
func (f *Filter) Insert(key uint64, v uint32) error {
	if v >= uint32(f.enc.n()) {
		return fmt.Errorf("inserting value %d: %w (values are < %d)", v, ErrValueRange, f.enc.n())
	}
	code := f.enc.code(v) << f.ctrBits
	var idx [MaxK]int
	f.locate(key, &idx)
	for j := 0; j < f.k; j++ {
		w := f.cell(idx[j])
		c := w & f.ctrMask
		if c == f.ctrMax {
			continue // sticky
		}
		c++
		if c == f.ctrMax {
			f.st.Saturated++
		}
		f.setCell(idx[j], (w&^f.ctrMask)^code|c)
	}
	f.st.Inserts++
	f.st.Keys++
	return nil
}

// check verifies that key holds value v before a delete or update: no empty
// cell (else ErrNotFound) and v's code consistent with every cell (else
// ErrMismatch). It is what makes a refused operation change nothing.
func (f *Filter) check(idx *[MaxK]int, code uint32) error {
	for j := 0; j < f.k; j++ {
		w := f.cell(idx[j])
		c := w & f.ctrMask
		if c == 0 {
			return ErrNotFound
		}
		if !f.consistent(w, code) {
			return ErrMismatch
		}
	}
	return nil
}

// Delete removes key with value v (Algorithm 4): counters decremented and
// the code XORed out. The paper reports an error at the first empty cell
// after having changed the earlier ones; here every cell is checked first,
// so a delete of an absent key (ErrNotFound) or with a value the cells
// cannot hold (ErrMismatch) changes nothing; those two come back as the
// bare sentinels, so a refused call allocates nothing. Saturated cells
// are skipped.
func (f *Filter) Delete(key uint64, v uint32) error {
	if v >= uint32(f.enc.n()) {
		return fmt.Errorf("deleting value %d: %w", v, ErrValueRange)
	}
	code := f.enc.code(v)
	var idx [MaxK]int
	f.locate(key, &idx)
	if err := f.check(&idx, code); err != nil {
		f.st.Rejected++
		return err // bare sentinel: a refused delete on the packet path allocates nothing
	}
	sc := code << f.ctrBits
	for j := 0; j < f.k; j++ {
		w := f.cell(idx[j])
		if w&f.ctrMask == f.ctrMax {
			continue
		}
		f.setCell(idx[j], (w^sc)-1)
	}
	f.st.Deletes++
	f.st.Keys--
	return nil
}

// Update replaces the value old of key by new: the cells' codes change by
// code(old) XOR code(new), counters unchanged (Algorithm 5, with the old
// value given by the caller instead of queried; Replace is the paper's
// form). old is checked against the cells first; on error nothing changes.
func (f *Filter) Update(key uint64, old, new uint32) error {
	n := uint32(f.enc.n())
	if old >= n || new >= n {
		return fmt.Errorf("updating value %d to %d: %w", old, new, ErrValueRange)
	}
	oc := f.enc.code(old)
	var idx [MaxK]int
	f.locate(key, &idx)
	if err := f.check(&idx, oc); err != nil {
		f.st.Rejected++
		return err // bare sentinel: a refused update on the packet path allocates nothing
	}
	d := (oc ^ f.enc.code(new)) << f.ctrBits
	for j := 0; j < f.k; j++ {
		w := f.cell(idx[j])
		if w&f.ctrMask == f.ctrMax {
			continue
		}
		f.setCell(idx[j], w^d)
	}
	f.st.Updates++
	return nil
}

// Replace is Algorithm 5 as printed: query the key's current value, then
// swap its code for v's in every occupied cell. It fails with ErrNotFound
// or ErrUndecodable when the query does not find a value.
func (f *Filter) Replace(key uint64, v uint32) error {
	old, r := f.Query(key)
	switch r {
	case Absent:
		f.st.Rejected++
		return fmt.Errorf("replacing value of key %#x: %w", key, ErrNotFound)
	case Unknown:
		f.st.Rejected++
		return fmt.Errorf("replacing value of key %#x: %w", key, ErrUndecodable)
	}
	return f.Update(key, old, v)
}
