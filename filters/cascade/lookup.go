package cascade

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync"
	"sync/atomic"

	"github.com/flowmon/flowmon/filters/qf"
)

// Contains reports whether the element with hash h may be in the filter:
// the active QF0 first, then the frozen one, then each level from the
// smallest, reading the pages of the level's file that the walk to h's
// run needs (usually one). Without tombstones it stops at the first
// copy; with tombstones anywhere it reads every level and reports whether
// the copies outnumber the tombstones. An error (a read failing, a page
// whose checksum does not match: a *LevelError) leaves the answer
// unknown. Lookups hold the filter only to probe the active QF0: they
// read the levels alongside each other, the insertions and the merges.
func (f *Filter) Contains(h uint64) (bool, error) {
	n, err := f.count(h, true)
	return n > 0, err
}

// Count is the number of copies of h's fingerprint stored (inserted and
// not deleted, over every level): a multiset count, over-counted only by
// colliding fingerprints.
func (f *Filter) Count(h uint64) (uint64, error) {
	n, err := f.count(h, false)
	return uint64(max(n, 0)), err
}

func (f *Filter) count(h uint64, contains bool) (int64, error) {
	v := f.value(h)
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return 0, ErrClosed
	}
	n := countIn(f.active, v)
	tombs := f.activeTombs
	vw := f.v
	vw.acquire()
	f.mu.Unlock()
	defer vw.release()
	firstCopy := contains && tombs+vw.tombs == 0
	n += countIn(vw.frozen, v)
	var sr *slotReader // from the pool when a level is read
	defer func() {
		if sr != nil {
			f.readers.put(sr)
		}
	}()
	for _, l := range vw.levels {
		if firstCopy && n > 0 {
			break
		}
		if l == nil {
			continue
		}
		if sr == nil {
			sr = f.readers.get()
		}
		live, tomb, err := sr.count(l, v>>1)
		if err != nil {
			return 0, fmt.Errorf("lookup: %w", err)
		}
		n += int64(live) - int64(tomb)
	}
	return n, nil
}

// countIn is a QF0's copies of value v less its tombstones of it.
func countIn(g *qf.Filter, v uint64) int64 {
	if g == nil {
		return 0
	}
	return int64(g.CountFingerprint(v)) - int64(g.CountFingerprint(v|1))
}

// slotReader reads a level's slots for one lookup a page at a time,
// keeping the last few pages read (a cluster usually lies in one page,
// sometimes across two). Pages are read into page-aligned buffers (for
// O_DIRECT) and their words decoded as the walk needs them. One lookup
// uses a reader at a time (readerPool).
type slotReader struct {
	l     *level
	pages [cachePages]cachedPage
	buf   []byte
	turn  int
	reads *atomic.Uint64 // the Filter's count of pages read
}

const cachePages = 4

type cachedPage struct {
	page uint64 // data page + 1; 0: empty
	b    []byte
}

func newSlotReader(reads *atomic.Uint64) *slotReader {
	s := &slotReader{buf: alignedBuf(cachePages * PageSize), reads: reads}
	for i := range s.pages {
		s.pages[i].b = s.buf[i*PageSize : (i+1)*PageSize : (i+1)*PageSize]
	}
	return s
}

// free releases the page buffers.
func (s *slotReader) free() {
	for i := range s.pages {
		s.pages[i] = cachedPage{}
	}
	freeBuf(s.buf)
	s.buf = nil
}

// readerPool keeps the slotReaders of lookups that ended for the next
// ones: as many readers as lookups ever ran at once (one per goroutine
// looking up), their buffers released at Close.
type readerPool struct {
	mu     sync.Mutex
	free   []*slotReader
	reads  atomic.Uint64
	closed bool
}

func (p *readerPool) get() *slotReader {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		s := p.free[n-1]
		p.free = p.free[:n-1]
		return s
	}
	return newSlotReader(&p.reads)
}

func (p *readerPool) put(s *slotReader) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.l = nil
	if p.closed {
		s.free()
		return
	}
	p.free = append(p.free, s)
}

// close frees the readers and those put back later.
func (p *readerPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, s := range p.free {
		s.free()
	}
	p.free = nil
}

// reset points the reader at level l, forgetting the pages it holds.
func (s *slotReader) reset(l *level) {
	s.l = l
	for i := range s.pages {
		s.pages[i].page = 0
	}
}

// word returns the level's data word k.
func (s *slotReader) word(k uint64) (uint64, error) {
	p, at := k/wordsPerPage, 8*(k%wordsPerPage)
	for i := range s.pages {
		if s.pages[i].page == p+1 {
			return binary.LittleEndian.Uint64(s.pages[i].b[at:]), nil
		}
	}
	l := s.l
	if p >= l.dataPages {
		return 0, nil
	}
	cp := &s.pages[s.turn]
	cp.page = 0
	if _, err := l.direct.ReadAt(cp.b, int64(PageSize*(1+p))); err != nil {
		return 0, &LevelError{Level: l.level, Path: l.path, Err: err}
	}
	s.reads.Add(1)
	if c := crc32.Checksum(cp.b, castagnoli); c != l.crcs[p] {
		return 0, &LevelError{Level: l.level, Path: l.path,
			Err: damaged("data page %d: checksum %08x, stored %08x", p, c, l.crcs[p])}
	}
	s.turn = (s.turn + 1) % cachePages
	cp.page = p + 1
	return binary.LittleEndian.Uint64(cp.b[at:]), nil
}

// Slot implements qf.SlotReader.
func (s *slotReader) Slot(i uint64) (uint64, error) {
	l := s.l
	if i >= l.slots {
		return 0, nil
	}
	bit := i * uint64(l.w)
	k, off := bit/64, bit%64
	v, err := s.word(k)
	if err != nil {
		return 0, err
	}
	v >>= off
	if off+uint64(l.w) > 64 {
		x, err := s.word(k + 1)
		if err != nil {
			return 0, err
		}
		v |= x << (64 - off)
	}
	return v & (1<<l.w - 1), nil
}

// count returns the copies of fingerprint fp stored in the level, live
// and as tombstones.
func (s *slotReader) count(l *level, fp uint64) (live, tomb uint64, err error) {
	s.reset(l)
	v := fp << 1
	rmask := uint64(1)<<l.r - 1
	base := v & rmask // the live value's remainder; the tombstone's is base|1
	err = qf.LinearRun(s, v>>l.r, func(rem uint64) bool {
		switch rem {
		case base:
			live++
		case base | 1:
			tomb++
		}
		return rem <= base|1
	})
	return live, tomb, err
}
