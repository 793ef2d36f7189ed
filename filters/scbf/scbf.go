package scbf

import (
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/flowmon/flowmon/internal/hashmix"
)

// Filter is a scaling counting Bloom filter of 64-bit key hashes, on the
// heap (New) or in a mapped file (Create, Open).
type Filter struct {
	opts  Options
	mem   []byte // the file's image: the mapping, or a heap slice
	subs  []sub
	file  *os.File // nil on the heap
	boot  uint64   // this machine's boot id, written with the dirty marker
	dirty bool     // the image's dirty marker is set
}

// sub is where a sub-filter lives in mem and its shape.
type sub struct {
	off int    // its header
	k   int    // hashes, one partition each
	cpf uint64 // counters per partition
}

func (s *sub) counters(mem []byte) []byte {
	return mem[s.off+subHeader : s.off+subHeader+int(counterBytes(s.k, s.cpf))]
}

// probes returns the first hash of key: probe j is the (j+1)th output of
// SplitMix64 seeded with it (see the package doc, "Probes").
func (f *Filter) probes(key uint64) uint64 { return hashmix.Mix(key ^ f.opts.Seed) }

// index is the counter probe j of key (first hash h) reaches in s: in
// partition j, at Reduce(Mix(h + (j+1)·Golden), cpf).
func (s *sub) index(h uint64, j int) uint64 {
	return uint64(j)*s.cpf + hashmix.Nth(h, j, s.cpf)
}

// contains reports whether all k counters of key (first hash h) are
// non-zero.
func (s *sub) contains(mem []byte, h uint64) bool {
	c := mem[s.off+subHeader:]
	var base uint64
	for range s.k {
		h += hashmix.Golden
		if nibble(c, base+hashmix.Reduce(hashmix.Mix(h), s.cpf)) == 0 {
			return false
		}
		base += s.cpf
	}
	return true
}

// New returns an empty filter on the heap. Its image is the file's, so
// tests and the evaluation see what a file holds; Flush and Close keep
// its bookkeeping and sync nothing.
func New(o Options) (*Filter, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("new scaling counting bloom filter: %w", err)
	}
	o = o.withDefaults()
	k, cpf := o.shape(0)
	size := uint64(headerSize+subHeader) + counterBytes(k, cpf)
	if size > math.MaxInt {
		return nil, fmt.Errorf("new scaling counting bloom filter: %w: capacity %d needs %d bytes, more than this platform addresses", ErrInvalidOptions, o.Capacity, size)
	}
	f := &Filter{opts: o, mem: make([]byte, size), boot: bootID()}
	f.initImage()
	return f, nil
}

// initImage writes a new image's header and first sub-filter; mem is
// zero and sized for them.
func (f *Filter) initImage() {
	writeParams(f.mem, f.opts)
	k, cpf := f.opts.shape(0)
	f.initSub(headerSize, 0, k, cpf)
	put(f.mem, offFilters, 1)
	f.subs = []sub{{off: headerSize, k: k, cpf: cpf}}
	put(f.mem, offCleanSum, cleanSum(f.mem))
}

func (f *Filter) initSub(off int, id uint64, k int, cpf uint64) {
	put(f.mem, off+subID, id)
	put(f.mem, off+subCount, 0)
	put(f.mem, off+subK, uint64(k))
	put(f.mem, off+subCPF, cpf)
}

// Options returns the options with every default filled in.
func (f *Filter) Options() Options { return f.opts }

// Check reports whether key may be in the filter: whether some sub-filter,
// scanned newest to oldest, has all of key's counters non-zero. It
// allocates nothing.
func (f *Filter) Check(key uint64) bool {
	h := f.probes(key)
	mem := f.mem
	for i := len(f.subs) - 1; i >= 0; i-- {
		if f.subs[i].contains(mem, h) {
			return true
		}
	}
	return false
}

// pick returns the sub-filter an id names: the newest whose first id is
// at most id.
func (f *Filter) pick(id uint64) int {
	i := len(f.subs) - 1
	for i > 0 && get(f.mem, f.subs[i].off+subID) > id {
		i--
	}
	return i
}

// Add adds key with id (see the package doc: ids increase with time, and
// Remove must be given the id key was added with). It scales the filter
// when id is above every id added and the newest sub-filter is full.
func (f *Filter) Add(key, id uint64) error {
	if err := f.begin(); err != nil {
		return fmt.Errorf("add to scaling counting bloom filter: %w", err)
	}
	seq, maxID := get(f.mem, offSeq), get(f.mem, offMaxID)
	t := f.pick(id)
	newest := len(f.subs) - 1
	grow := id > maxID && t == newest && get(f.mem, f.subs[newest].off+subCount) >= f.opts.Capacity
	if grow {
		if len(f.subs) == MaxFilters {
			return fmt.Errorf("add to scaling counting bloom filter: %w: %d sub-filters of %d elements", ErrFull, MaxFilters, f.opts.Capacity)
		}
		t = len(f.subs)
	}
	h := f.probes(key)
	f.intend(opAdd, seq, key, t, h)
	if grow {
		if err := f.grow(maxID + 1); err != nil {
			store(f.mem, offIntentSeq, 0) // nothing changed: nothing to undo
			return fmt.Errorf("add to scaling counting bloom filter: %w", err)
		}
	}
	crashPoint(pointGrown)
	s := &f.subs[t]
	c := s.counters(f.mem)
	sats := get(f.mem, offSats)
	for j := range s.k {
		i := s.index(h, j)
		if v := nibble(c, i); v == 0xf {
			sats++
		} else {
			setNibble(c, i, v+1)
		}
		if j == s.k/2 {
			crashPoint(pointHalf)
		}
	}
	put(f.mem, offSats, sats)
	put(f.mem, s.off+subCount, get(f.mem, s.off+subCount)+1)
	put(f.mem, offMaxID, max(maxID, id))
	crashPoint(pointBeforeCommit)
	store(f.mem, offSeq, seq+1)
	return nil
}

// Remove removes key added with id from the sub-filter id names, and
// reports whether it did: false, changing nothing, when one of key's
// counters there is zero (that sub-filter does not hold key). Saturated
// counters are left at 15. Every call counts as an operation (Seq).
func (f *Filter) Remove(key, id uint64) (bool, error) {
	if err := f.begin(); err != nil {
		return false, fmt.Errorf("remove from scaling counting bloom filter: %w", err)
	}
	seq := get(f.mem, offSeq)
	t := f.pick(id)
	s := &f.subs[t]
	h := f.probes(key)
	if !s.contains(f.mem, h) {
		store(f.mem, offSeq, seq+1)
		return false, nil
	}
	f.intend(opRemove, seq, key, t, h)
	c := s.counters(f.mem)
	for j := range s.k {
		i := s.index(h, j)
		if v := nibble(c, i); v != 0xf {
			setNibble(c, i, v-1)
		}
		if j == s.k/2 {
			crashPoint(pointHalf)
		}
	}
	if n := get(f.mem, s.off+subCount); n > 0 {
		put(f.mem, s.off+subCount, n-1)
	}
	crashPoint(pointBeforeCommit)
	store(f.mem, offSeq, seq+1)
	return true, nil
}

// begin sets the dirty marker before the first change after a flush, and
// syncs it to the file before any change is made.
func (f *Filter) begin() error {
	if f.mem == nil {
		return ErrClosed
	}
	if f.dirty {
		return nil
	}
	put(f.mem, offBoot, f.boot)
	store(f.mem, offDirty, 1)
	if f.file != nil {
		if err := f.syncHeader(); err != nil {
			return fmt.Errorf("mark %s dirty: %w", f.file.Name(), err)
		}
	}
	f.dirty = true
	return nil
}

// intend records the operation about to run as operation seq+1, with the
// values it will change, so that Open can undo it if it does not end.
// Sub-filter t may be one about to be added (its counters are zero).
func (f *Filter) intend(op int, seq, key uint64, t int, h uint64) {
	m := f.mem
	put(m, offIntentOp, uint64(op))
	put(m, offIntentKey, key)
	put(m, offIntentSub, uint64(t))
	put(m, offIntentFilters, uint64(len(f.subs)))
	put(m, offIntentMaxID, get(m, offMaxID))
	put(m, offIntentSats, get(m, offSats))
	old := m[offIntentNibbles:intentEnd]
	if t < len(f.subs) {
		s := &f.subs[t]
		put(m, offIntentCount, get(m, s.off+subCount))
		c := s.counters(m)
		for j := range s.k {
			setNibble(old, uint64(j), nibble(c, s.index(h, j)))
		}
	} else {
		put(m, offIntentCount, 0)
	}
	store(m, offIntentSeq, seq+1)
	crashPoint(pointIntent)
}

// grow appends a sub-filter whose ids start at first.
func (f *Filter) grow(first uint64) error {
	i := len(f.subs)
	k, cpf := f.opts.shape(i)
	off := len(f.mem)
	size := uint64(off) + subHeader + counterBytes(k, cpf)
	if size > math.MaxInt {
		return fmt.Errorf("add sub-filter %d: %w: the filter would take %d bytes, more than this platform addresses", i, ErrFull, size)
	}
	if err := f.resize(int(size)); err != nil {
		return fmt.Errorf("add sub-filter %d: %w", i, err)
	}
	crashPoint(pointResized)
	f.initSub(off, first, k, cpf)
	crashPoint(pointSubInit)
	f.subs = append(f.subs, sub{off: off, k: k, cpf: cpf})
	store(f.mem, offFilters, uint64(len(f.subs)))
	return nil
}

// resize sets the image's size: the file's (ftruncate and mremap), or a
// new heap slice.
func (f *Filter) resize(size int) error {
	if f.file != nil {
		return f.resizeFile(size)
	}
	if size <= cap(f.mem) {
		f.mem = f.mem[:size]
		return nil
	}
	m := make([]byte, size, size+size/4)
	copy(m, f.mem)
	f.mem = m
	return nil
}

// Flush makes the image durable: it msyncs every page, then stores the
// clean seq and checksum, clears the dirty marker and msyncs the header.
// A filter unchanged since its last flush is not synced again.
func (f *Filter) Flush() error {
	if f.mem == nil {
		return fmt.Errorf("flush scaling counting bloom filter: %w", ErrClosed)
	}
	if !f.dirty {
		return nil
	}
	if f.file != nil {
		if err := f.syncAll(); err != nil {
			return fmt.Errorf("flush %s: %w", f.file.Name(), err)
		}
	}
	put(f.mem, offCleanSeq, get(f.mem, offSeq))
	put(f.mem, offCleanSum, cleanSum(f.mem))
	store(f.mem, offDirty, 0)
	if f.file != nil {
		if err := f.syncHeader(); err != nil {
			return fmt.Errorf("flush %s: %w", f.file.Name(), err)
		}
	}
	f.dirty = false
	return nil
}

// Close flushes the filter and releases its file. Closing twice is a
// no-op.
func (f *Filter) Close() error {
	if f.mem == nil {
		return nil
	}
	err := f.Flush()
	if f.file != nil {
		err = errors.Join(err, f.release())
	}
	f.mem, f.subs, f.file = nil, nil, nil
	return err
}

// Seq returns the number of Add and Remove calls the filter holds, since
// Create or New: the N of "consistent as of operation N".
func (f *Filter) Seq() uint64 { return f.field(offSeq) }

// Len returns the elements held: adds minus removes, over sub-filters.
func (f *Filter) Len() uint64 {
	var n uint64
	for i := range f.subs {
		n += get(f.mem, f.subs[i].off+subCount)
	}
	return n
}

// Saturations returns the increments saturated counters absorbed: each
// is a counter that would have passed 15 (dablooms' logged overflow),
// and now stays at 15.
func (f *Filter) Saturations() uint64 { return f.field(offSats) }

// MemoryBytes returns the size of the image: the mapped file, or the heap
// slice in use.
func (f *Filter) MemoryBytes() uint64 { return uint64(len(f.mem)) }

func (f *Filter) field(off int) uint64 {
	if f.mem == nil {
		return 0
	}
	return get(f.mem, off)
}

// Subfilter describes one sub-filter.
type Subfilter struct {
	FirstID  uint64  // the smallest id it holds
	Count    uint64  // elements: adds minus removes
	Hashes   int     // k
	Counters uint64  // k·cpf
	Target   float64 // its target rate, p_i
	Rate     float64 // its rate at Count elements, (1 - (1-1/cpf)^Count)^k
}

// Subfilters describes the sub-filters, oldest first.
func (f *Filter) Subfilters() []Subfilter {
	out := make([]Subfilter, len(f.subs))
	for i, s := range f.subs {
		n := get(f.mem, s.off+subCount)
		out[i] = Subfilter{
			FirstID: get(f.mem, s.off+subID), Count: n, Hashes: s.k, Counters: uint64(s.k) * s.cpf,
			Target: f.opts.SubfilterRate(i), Rate: rate(s.k, s.cpf, n),
		}
	}
	return out
}

// EstimatedFPRate is the overall false-positive rate the sub-filters'
// counts predict, 1 - Π(1 - rate_i), assuming distinct elements.
func (f *Filter) EstimatedFPRate() float64 {
	miss := 1.0
	for _, s := range f.Subfilters() {
		miss *= 1 - s.Rate
	}
	return 1 - miss
}
