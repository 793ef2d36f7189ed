package cascade

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/flowmon/flowmon/filters/qf"
)

// slotReader reads a level's slots for one lookup a page at a time,
// keeping the last few pages read (a cluster usually lies in one page,
// sometimes across two). Pages are read into page-aligned buffers (for
// O_DIRECT) and their words decoded as the walk needs them.
type slotReader struct {
	l     *level
	pages [cachePages]cachedPage
	buf   []byte
	turn  int
	reads uint64
}

const cachePages = 4

type cachedPage struct {
	page uint64 // data page + 1; 0: empty
	b    []byte
}

func newSlotReader() *slotReader {
	s := &slotReader{buf: alignedBuf(cachePages * PageSize)}
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
	s.reads++
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
