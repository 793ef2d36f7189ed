package capture

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"unsafe"

	"github.com/flowmon/flowmon/internal/memhint"
)

// A regular, uncompressed classic pcap file is read from a read-only
// mapping of the whole file instead of through read(2): its records are
// decoded where the page cache holds them, without the copy into the read
// buffer that is the largest single cost of reading a cached file
// (docs/results/pcap-mmap.md). The mapping is the file's size in address
// space, but what it holds in memory is bounded by mapWindow, not by the
// file: the pages ahead are asked for before the reader reaches them, and
// those behind are dropped from the process as it passes them.
//
// What does not fit falls back to the read path, reading the same bytes
// with the same errors: standard input and pipes (not regular files),
// gzip and pcapng files, files too short for a pcap header, a file system
// or platform where mmap fails (pcapmap_other.go), and a file that grows
// while it is read: at the end of the mapping, a file that is now longer
// is read on with read(2) from where the mapping ends. A file cut shorter
// in place while it is mapped faults on the pages it lost, as any mapping
// does: a replay turns that fault into an error that ends it as damage
// does (pipeline.ErrChanged); another reader of a mapped file that wants
// the same sets debug.SetPanicOnFault on the goroutine that reads.

// mapWindow bounds the bytes of the mapping the reader keeps: a record is
// returned from a window of up to mapWindow bytes from the first record
// not whole in the last window, the next mapWindow bytes are asked to be read ahead, and
// the pages before the window are dropped when the next one opens. A
// reader's resident share of its file is then about one window, whatever
// the file's size; a window is far larger than a record (maxRecord), so a
// record is always whole in one.
const mapWindow = 2 << 20

// fileMap is a pcap file mapped for reading, and how far the reader has
// gone through it.
type fileMap struct {
	file    *os.File
	data    []byte          // the whole file, as it was when mapped
	raw     *countingReader // the Reader's progress; the read path's source after a fallback
	dropped int             // data[:dropped] has been dropped from memory
	ahead   int             // data[:ahead] has been asked for ahead
	fetched int             // data[:fetched] has been prefetched into the cache
}

// prefetchAhead is how far ahead of the next record the mapping's lines
// are prefetched. A record's place is known only once the one before it
// is read, so without it every record header is a cache miss the reader
// waits for, where read(2)'s copy had brought the bytes into the cache;
// the hardware's prefetchers do not cross pages. 8 and 16 KiB (a few
// dozen records) did best of the distances measured
// (docs/results/pcap-mmap.md, "Prefetch distance"): none leaves the
// misses, 64 KiB loses lines from the cache before the reader gets there.
const prefetchAhead = 16 << 10

// prefetch has the lines up to prefetchAhead bytes past off, the next
// record, fetched into the cache.
func (m *fileMap) prefetch(off int) {
	if to := min(off+prefetchAhead, len(m.data)); to > m.fetched {
		memhint.PrefetchLines(unsafe.Pointer(&m.data[m.fetched]), uintptr(to-m.fetched))
		m.fetched = to
	}
}

// openMapped opens f, a regular file of size bytes, as a classic pcap
// read from a mapping. It returns nil, having changed nothing, when the
// file is not one to map (not classic pcap, too short, or mmap fails), so
// that the read path opens it and reports what is wrong with it.
func openMapped(f *os.File, name string, size int64) *Reader {
	if size < 24 || int64(int(size)) != size {
		return nil
	}
	data, err := mapFile(f, int(size))
	if err != nil {
		return nil
	}
	var pf *pcapFile
	switch binary.LittleEndian.Uint32(data) {
	case 0xA1B2C3D4, 0xD4C3B2A1, 0xA1B23C4D, 0x4D3CB2A1:
		pf, err = parsePcapHeader(data[:24])
	}
	if pf == nil || err != nil {
		unmap(data)
		return nil
	}
	r := &Reader{name: name, total: size, dec: defaultDecodeOptions, pcap: pf, link: pf.link}
	r.raw = &countingReader{r: f}
	r.count = r.raw
	pf.m = &fileMap{file: f, data: data, raw: r.raw}
	r.closer = pf.m
	adviseSequential(data)
	return r
}

// fillMapped is fill for a mapped file: it opens a new window at the next
// record and returns that record, with the read path's errors for a record
// the file cuts short.
func (f *pcapFile) fillMapped() ([]byte, error) {
	m := f.m
	f.win = nil
	f.off += int64(f.pending)
	f.pending = 0
	m.advance(int(f.off))
	rest := m.data[f.off:]
	if len(rest) < 16 {
		if m.grown() {
			return f.leaveMap()
		}
		if len(rest) == 0 {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("record header cut short (%d of 16 bytes): %w", len(rest), io.ErrUnexpectedEOF)
	}
	caplen, wirelen := f.lengths(rest)
	if caplen > maxRecord {
		return nil, fmt.Errorf("captured length %d: %w", caplen, ErrRecordTooLong)
	}
	n := 16 + int(caplen)
	if n > len(rest) {
		if m.grown() {
			return f.leaveMap()
		}
		return nil, cutShort(caplen, len(rest)-16, io.EOF)
	}
	f.stamp(rest, caplen, wirelen)
	f.pending = n
	f.win = rest[n:min(len(rest), mapWindow)]
	return rest[16:n:n], nil
}

// advance opens the window at off: the pages before it are dropped, and
// those of the next window asked for. Progress counts the window as read,
// as the read path counts what it has read into its buffer.
func (m *fileMap) advance(off int) {
	m.raw.n.Store(int64(min(off+mapWindow, len(m.data))))
	if behind := off &^ (pageSize - 1); behind > m.dropped {
		dropPages(m.data[m.dropped:behind])
		m.dropped = behind
	}
	if end := min(off+2*mapWindow, len(m.data)); end > m.ahead {
		from := max(m.ahead, off) &^ (pageSize - 1)
		willNeed(m.data[from:end])
		m.ahead = end
	}
}

// grown reports whether the file is now longer than its mapping: it is
// being written, and the rest is read with read(2).
func (m *fileMap) grown() bool {
	size, err := fileSize(m.file)
	return err == nil && size > int64(len(m.data))
}

// leaveMap has the rest of the file, from the next record on, read through
// a read buffer as if it had been opened that way, and reads that record.
func (f *pcapFile) leaveMap() ([]byte, error) {
	m := f.m
	if _, err := m.file.Seek(f.off, io.SeekStart); err != nil {
		return nil, fmt.Errorf("read on past the mapping: %w", err)
	}
	m.raw.n.Store(f.off)
	f.br = bufio.NewReaderSize(m.raw, bufSize)
	f.m = nil
	unmap(m.data)
	m.data = nil
	return f.fill()
}

// Close unmaps the file and closes it.
func (m *fileMap) Close() error {
	if m.data != nil {
		unmap(m.data)
		m.data = nil
	}
	return m.file.Close()
}

// pageSize is the unit the pages behind the reader are dropped in.
var pageSize = os.Getpagesize()
