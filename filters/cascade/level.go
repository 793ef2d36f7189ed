package cascade

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"

	"github.com/flowmon/flowmon/filters/qf"
)

// A level file (see the package doc for the byte layout): a header page,
// the QF's slots packed in little-endian words over D data pages, and the
// pages' CRC-32C checksums.
const (
	levelMagic   = "FMCFLEVL"
	levelVersion = 1
	levelHeader  = 64 // bytes of page 0 in use
	wordsPerPage = PageSize / 8
	levelExt     = ".qfl"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// levelName is the file name of level i written as generation gen.
func levelName(i int, gen uint64) string { return fmt.Sprintf("level-%02d-%016x%s", i, gen, levelExt) }

// levelMeta is what the manifest records of a level and its header
// repeats.
type levelMeta struct {
	level      int
	gen        uint64
	q, r       uint
	slots      uint64 // 2^q and the overflow
	entries    uint64 // fingerprints stored, tombstones included
	tombstones uint64
	dataPages  uint64
	tableCRC   uint32 // CRC-32C of the page checksums
	headerCRC  uint32 // CRC-32C of the header's first 60 bytes
}

func (m *levelMeta) name() string { return levelName(m.level, m.gen) }

// tablePages is the number of pages the page checksums take.
func (m *levelMeta) tablePages() uint64 { return (4*m.dataPages + PageSize - 1) / PageSize }

// fileSize is the level file's length.
func (m *levelMeta) fileSize() uint64 { return PageSize * (1 + m.dataPages + m.tablePages()) }

func (m *levelMeta) header() []byte {
	b := make([]byte, PageSize)
	copy(b, levelMagic)
	b[8], b[9], b[10], b[11] = levelVersion, byte(m.level), byte(m.q), byte(m.r)
	binary.LittleEndian.PutUint32(b[12:], PageSize)
	binary.LittleEndian.PutUint64(b[16:], m.gen)
	binary.LittleEndian.PutUint64(b[24:], m.slots)
	binary.LittleEndian.PutUint64(b[32:], m.entries)
	binary.LittleEndian.PutUint64(b[40:], m.tombstones)
	binary.LittleEndian.PutUint64(b[48:], m.dataPages)
	binary.LittleEndian.PutUint32(b[56:], m.tableCRC)
	m.headerCRC = crc32.Checksum(b[:60], castagnoli)
	binary.LittleEndian.PutUint32(b[60:], m.headerCRC)
	return b
}

// parseHeader reads a header page written by header.
func parseHeader(b []byte) (levelMeta, error) {
	var m levelMeta
	if len(b) < levelHeader || string(b[:8]) != levelMagic {
		return m, errors.New("not a level file (bad magic)")
	}
	if got, want := crc32.Checksum(b[:60], castagnoli), binary.LittleEndian.Uint32(b[60:]); got != want {
		return m, fmt.Errorf("header checksum %08x, stored %08x", got, want)
	}
	if b[8] != levelVersion {
		return m, fmt.Errorf("level format version %d, this flowmon reads %d", b[8], levelVersion)
	}
	if ps := binary.LittleEndian.Uint32(b[12:]); ps != PageSize {
		return m, fmt.Errorf("page size %d, want %d", ps, PageSize)
	}
	m = levelMeta{
		level: int(b[9]), q: uint(b[10]), r: uint(b[11]),
		gen:        binary.LittleEndian.Uint64(b[16:]),
		slots:      binary.LittleEndian.Uint64(b[24:]),
		entries:    binary.LittleEndian.Uint64(b[32:]),
		tombstones: binary.LittleEndian.Uint64(b[40:]),
		dataPages:  binary.LittleEndian.Uint64(b[48:]),
		tableCRC:   binary.LittleEndian.Uint32(b[56:]),
		headerCRC:  binary.LittleEndian.Uint32(b[60:]),
	}
	return m, nil
}

// level is an open level file.
type level struct {
	levelMeta
	w      uint
	path   string
	f      *os.File // reads for merges and checks
	direct *os.File // O_DIRECT reads for lookups (Uncached), else f
	crcs   []uint32 // the checksum of each data page

	refs     atomic.Int32 // the views naming the level (view.go)
	obsolete atomic.Bool  // a merge replaced it: remove the file when closed
}

func (l *level) close() error {
	err := l.f.Close()
	if l.direct != l.f {
		err = errors.Join(err, l.direct.Close())
	}
	return err
}

// LevelError is why a level was refused (or dropped): its number, its
// file and what is wrong. It wraps ErrCorrupt, or the I/O error.
type LevelError struct {
	Level int
	Path  string
	Err   error
}

func (e *LevelError) Error() string {
	return fmt.Sprintf("cascade level %d (%s): %v", e.Level, e.Path, e.Err)
}

func (e *LevelError) Unwrap() error { return e.Err }

func damaged(format string, a ...any) error {
	return fmt.Errorf(format+": %w", append(a, ErrCorrupt)...)
}

// openLevel opens the level the manifest describes as want and checks
// that the file is whole: its size, its header (against want), its
// checksum table and, unless quick, every data page's checksum.
func openLevel(dir string, want levelMeta, quick, uncached bool) (*level, error) {
	l := &level{levelMeta: want, w: want.r + 3, path: filepath.Join(dir, want.name())}
	err := l.open(quick, uncached)
	if err != nil {
		if l.f != nil {
			l.close()
		}
		return nil, &LevelError{Level: want.level, Path: l.path, Err: err}
	}
	return l, nil
}

func (l *level) open(quick, uncached bool) error {
	f, err := os.Open(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("the manifest names it but %w: %w", ErrCorrupt, err)
	}
	if err != nil {
		return err
	}
	l.f, l.direct = f, f
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if uint64(st.Size()) != l.fileSize() {
		return damaged("%d bytes, the manifest's level needs %d: the file was cut short or replaced", st.Size(), l.fileSize())
	}
	page := make([]byte, PageSize)
	if _, err := f.ReadAt(page, 0); err != nil {
		return err
	}
	got, err := parseHeader(page)
	if err != nil {
		return damaged("%v", err)
	}
	if slices.ContainsFunc(page[levelHeader:], func(c byte) bool { return c != 0 }) {
		return damaged("header page: bytes set past the header")
	}
	if got != l.levelMeta {
		return damaged("the header (%+v) disagrees with the manifest (%+v)", got, l.levelMeta)
	}
	table := make([]byte, l.tablePages()*PageSize)
	if _, err := f.ReadAt(table, int64(PageSize*(1+l.dataPages))); err != nil {
		return err
	}
	if c := crc32.Checksum(table, castagnoli); c != l.tableCRC {
		return damaged("page checksum table: checksum %08x, stored %08x", c, l.tableCRC)
	}
	l.crcs = make([]uint32, l.dataPages)
	for i := range l.crcs {
		l.crcs[i] = binary.LittleEndian.Uint32(table[4*i:])
	}
	if !quick {
		r := l.pages()
		for {
			if _, err := r.next(); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return err
			}
		}
	}
	if uncached {
		if l.direct, err = openDirect(l.path); err != nil {
			l.direct = l.f
			return err
		}
	}
	return nil
}

// pageReader reads a level's data pages in order, a chunk at a time,
// checking each page's checksum.
type pageReader struct {
	l    *level
	next func() ([]byte, error)
}

const readChunk = 16 // pages per read or write: 64 KiB, kernel readahead does the rest

func (l *level) pages() *pageReader {
	buf := make([]byte, readChunk*PageSize)
	var p uint64
	r := &pageReader{l: l}
	r.next = func() ([]byte, error) {
		if p == l.dataPages {
			return nil, io.EOF
		}
		n := min(readChunk, l.dataPages-p)
		b := buf[:n*PageSize]
		if _, err := l.f.ReadAt(b, int64(PageSize*(1+p))); err != nil {
			return nil, &LevelError{Level: l.level, Path: l.path, Err: err}
		}
		for i := range n {
			if c := crc32.Checksum(b[i*PageSize:(i+1)*PageSize], castagnoli); c != l.crcs[p+i] {
				return nil, &LevelError{Level: l.level, Path: l.path,
					Err: damaged("data page %d: checksum %08x, stored %08x", p+i, c, l.crcs[p+i])}
			}
		}
		p += n
		return b, nil
	}
	return r
}

// reader decodes the level's fingerprints (values) in ascending order.
func (l *level) reader() (*qf.Reader, error) {
	pr := l.pages()
	words := make([]uint64, readChunk*wordsPerPage)
	left := qf.LinearWords(l.slots, l.r) // the padding of the last page is not slots
	return qf.NewReader(l.q, l.r, l.slots, func() ([]uint64, error) {
		if left == 0 {
			return nil, io.EOF
		}
		b, err := pr.next()
		if err != nil {
			return nil, err
		}
		n := min(uint64(len(b)/8), left)
		for i := range n {
			words[i] = binary.LittleEndian.Uint64(b[8*i:])
		}
		left -= n
		return words[:n], nil
	})
}

// levelWriter writes a level file: the data pages as a qf.Writer hands
// over their words, a chunk at a time and front to back, then the page
// checksums, then the header, then fsync.
type levelWriter struct {
	f    *os.File
	path string
	buf  []byte // a chunk of pages, filled up to n bytes
	n    int
	off  int64 // file offset of buf
	crcs []uint32
}

func createLevel(path string) (*levelWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return &levelWriter{f: f, path: path, buf: make([]byte, readChunk*PageSize), off: PageSize}, nil
}

// words appends packed slot words.
func (w *levelWriter) words(ws []uint64) error {
	for _, x := range ws {
		binary.LittleEndian.PutUint64(w.buf[w.n:], x)
		w.n += 8
		if w.n == len(w.buf) {
			if err := w.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush writes the buffered pages, padding the last one with zeros.
func (w *levelWriter) flush() error {
	if w.n == 0 {
		return nil
	}
	end := (w.n + PageSize - 1) / PageSize * PageSize
	clear(w.buf[w.n:end])
	for p := 0; p < end; p += PageSize {
		w.crcs = append(w.crcs, crc32.Checksum(w.buf[p:p+PageSize], castagnoli))
	}
	if _, err := w.f.WriteAt(w.buf[:end], w.off); err != nil {
		return err
	}
	w.off += int64(end)
	w.n = 0
	return nil
}

// finish writes the checksums and the header (filling m's dataPages,
// tableCRC and headerCRC), syncs and closes the file.
func (w *levelWriter) finish(m *levelMeta, uncached bool) error {
	if err := w.flush(); err != nil {
		return err
	}
	m.dataPages = uint64(len(w.crcs))
	table := make([]byte, m.tablePages()*PageSize)
	for i, c := range w.crcs {
		binary.LittleEndian.PutUint32(table[4*i:], c)
	}
	m.tableCRC = crc32.Checksum(table, castagnoli)
	if _, err := w.f.WriteAt(table, w.off); err != nil {
		return err
	}
	if _, err := w.f.WriteAt(m.header(), 0); err != nil {
		return err
	}
	if err := w.f.Sync(); err != nil {
		return err
	}
	if uncached {
		dropCache(w.f)
	}
	return w.f.Close()
}

// abort removes a level file that will not be used.
func (w *levelWriter) abort() {
	w.f.Close()
	os.Remove(w.path)
}
