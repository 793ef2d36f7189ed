package cascadeeval

import (
	"fmt"
	"os"
	"slices"

	"github.com/flowmon/flowmon/filters/bloom"
	"github.com/flowmon/flowmon/internal/hashmix"
)

// diskBloom is the paper's baseline (Section 3): a standard Bloom filter
// whose bit array is a file, updated through a RAM buffer of bit
// positions — the "elevator" Bloom filter: when the buffer is full the
// positions are sorted and applied in file order, each touched page read,
// its bits set and written back; runs of consecutive touched pages go in
// one read and one write (up to ioChunk pages), so when a flush touches
// most pages it rewrites the file sequentially. Lookups pread the page of
// each of the k bits, stopping at the first clear one. Every read and
// write uses O_DIRECT (unless cached), so the page cache serves nothing.
//
// Positions come from the element's hash by enhanced double hashing on
// hashmix.Pair, reduced onto [0, m) by hashmix.Reduce.
type diskBloom struct {
	f       *os.File
	m       uint64 // bits, a whole number of pages
	k       int
	buf     []uint64 // pending positions; its capacity is the RAM budget
	io      []byte   // page-aligned, ioChunk pages
	last    uint64   // page held in io[:pageSize] by a lookup, +1 (0: none)
	reads   uint64   // pages read
	writes  uint64   // pages written
	flushes uint64
}

const (
	pageSize = 4096
	pageBits = pageSize * 8
	ioChunk  = 256 // pages per coalesced read or write: 1 MiB
	// bloomSeed separates the baseline's positions from other uses of
	// the same hashes.
	bloomSeed = 0x656c657661746f72
)

// newDiskBloom creates a zeroed filter for n elements at false-positive
// rate p in path, whose insert buffer holds ramBytes of positions.
func newDiskBloom(path string, n uint64, p float64, ramBytes uint64, cached bool) (*diskBloom, error) {
	m, k := bloom.OptimalShape(n, p)
	m = (m + pageBits - 1) / pageBits * pageBits
	var f *os.File
	var err error
	if cached {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	} else {
		f, err = openDirect(path)
	}
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(int64(m / 8)); err != nil {
		f.Close()
		return nil, err
	}
	io, err := alignedBuf(ioChunk * pageSize)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &diskBloom{f: f, m: m, k: k, buf: make([]uint64, 0, ramBytes/8), io: io}, nil
}

func (b *diskBloom) close() error {
	freeBuf(b.io)
	return b.f.Close()
}

// positions calls fn with h's k bit positions.
func (b *diskBloom) positions(h uint64, fn func(pos uint64) bool) {
	x, d := hashmix.Pair(h, bloomSeed)
	for i := range b.k {
		if !fn(hashmix.Reduce(x, b.m)) {
			return
		}
		x += d
		d += uint64(i)
	}
}

// add buffers h's positions, flushing first when they do not fit.
func (b *diskBloom) add(h uint64) error {
	if len(b.buf)+b.k > cap(b.buf) {
		if err := b.flush(); err != nil {
			return err
		}
	}
	b.positions(h, func(pos uint64) bool {
		b.buf = append(b.buf, pos)
		return true
	})
	return nil
}

// flush applies the buffered positions in file order.
func (b *diskBloom) flush() error {
	slices.Sort(b.buf)
	for i := 0; i < len(b.buf); {
		first := b.buf[i] / pageBits
		last, j := first, i
		for j < len(b.buf) {
			p := b.buf[j] / pageBits
			if p > last+1 || p-first >= ioChunk {
				break
			}
			last = p
			j++
		}
		n := last - first + 1
		chunk := b.io[:n*pageSize]
		if _, err := b.f.ReadAt(chunk, int64(first*pageSize)); err != nil {
			return fmt.Errorf("bloom flush: %w", err)
		}
		for _, pos := range b.buf[i:j] {
			off := pos - first*pageBits
			chunk[off/8] |= 1 << (off % 8)
		}
		if _, err := b.f.WriteAt(chunk, int64(first*pageSize)); err != nil {
			return fmt.Errorf("bloom flush: %w", err)
		}
		b.reads += n
		b.writes += n
		i = j
	}
	b.buf = b.buf[:0]
	b.last = 0
	b.flushes++
	return nil
}

// sync flushes the buffer and syncs the file.
func (b *diskBloom) sync() error {
	if err := b.flush(); err != nil {
		return err
	}
	return b.f.Sync()
}

// contains reports whether h may be in the filter, reading the page of
// each position until a clear bit.
func (b *diskBloom) contains(h uint64) (bool, error) {
	if len(b.buf) > 0 {
		if err := b.flush(); err != nil {
			return false, err
		}
	}
	in := true
	var err error
	b.positions(h, func(pos uint64) bool {
		page := pos / pageBits
		if b.last != page+1 {
			if _, err = b.f.ReadAt(b.io[:pageSize], int64(page*pageSize)); err != nil {
				return false
			}
			b.reads++
			b.last = page + 1
		}
		off := pos - page*pageBits
		in = b.io[off/8]&(1<<(off%8)) != 0
		return in
	})
	b.last = 0 // the next lookup reads its own pages: no cache across lookups
	return in && err == nil, err
}

// bulkLoad sets the bits of n keys at once, building the bit array in the
// harness's memory and writing it sequentially: the filled filter the
// lookups are measured on, without the hours its buffered inserts would
// take. Not part of the budgeted structure.
func (b *diskBloom) bulkLoad(n uint64, key func(i uint64) uint64) error {
	bits := make([]byte, b.m/8)
	for i := range n {
		b.positions(key(i), func(pos uint64) bool {
			bits[pos/8] |= 1 << (pos % 8)
			return true
		})
	}
	for off := uint64(0); off < uint64(len(bits)); off += ioChunk * pageSize {
		chunk := b.io[:copy(b.io, bits[off:])]
		if _, err := b.f.WriteAt(chunk, int64(off)); err != nil {
			return fmt.Errorf("bloom bulk load: %w", err)
		}
	}
	return b.f.Sync()
}
