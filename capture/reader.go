package capture

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/pcapgo"
)

// ErrFormat is wrapped by errors for files that are neither pcap nor pcapng.
var ErrFormat = errors.New("not a pcap or pcapng file")

// ReadError reports damage in a capture file: the packets before Offset
// were read, the record at Offset was not.
type ReadError struct {
	Name    string // file name, "-" for stdin
	Offset  int64  // byte offset of the damaged record (in the decompressed stream for .gz)
	Packets uint64 // records read before the damage
	Err     error
}

func (e *ReadError) Error() string {
	return fmt.Sprintf("%s: damaged record at offset %d after %d packets: %v", e.Name, e.Offset, e.Packets, e.Err)
}

func (e *ReadError) Unwrap() error { return e.Err }

// Reader reads a pcap or pcapng file (optionally gzip-compressed) and
// decodes its packets in place. A Reader is not safe for concurrent use,
// except Progress, which may be called from any goroutine.
type Reader struct {
	name   string
	closer io.Closer
	raw    *countingReader // the file's bytes, before decompression
	count  *countingReader // the capture's bytes, after decompression
	buf    *bufio.Reader   // what pcapgo reads from
	pcap   *pcapFile
	ng     *pcapgo.NgReader
	link   uint16
	total  int64 // file size, or -1 when unknown
	stats  Stats
	done   error          // sticky end: io.EOF or a *ReadError
	dec    *DecodeOptions // never nil
	defrag Defragmenter   // nil: fragments are handed on as Decode made them
	filter *Filter        // nil: every frame is read
	taker  FrameTaker     // nil: every frame is decoded here
	dtaker DatagramTaker  // taker, when it takes reassembled datagrams too
	frame  Frame          // what taker is offered
}

// bufSize is the read buffer: large reads, and at least pcapgo's own size
// so pcapgo uses this buffer instead of wrapping another around it. 256
// KiB makes a quarter of the read(2) calls of 64 KiB and stays inside the
// core's 512 KiB L2 when the decoder reads what the kernel copied, which
// a larger buffer does not (docs/results/pipeline.md, "The read
// buffer").
const bufSize = 1 << 18

// Open opens a capture file; name "-" reads standard input. A regular,
// uncompressed classic pcap file is read in place from a mapping of it
// (pcapmap.go); every other input through a read buffer, as NewReader.
func Open(name string) (*Reader, error) {
	if name == "-" {
		return NewReader(os.Stdin, "-", -1)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("open capture: %w", err)
	}
	var size int64 = -1
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
		if r := openMapped(f, name, size); r != nil {
			return r, nil
		}
	}
	r, err := NewReader(f, name, size)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closer = f
	return r, nil
}

// NewReader reads a capture from rd; size is its length in bytes for
// progress reports, or -1.
func NewReader(rd io.Reader, name string, size int64) (*Reader, error) {
	r := &Reader{name: name, total: size, dec: defaultDecodeOptions}
	r.raw = &countingReader{r: rd}
	head := bufio.NewReaderSize(r.raw, bufSize)
	var src io.Reader = head
	if magic, _ := head.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(head)
		if err != nil {
			return nil, fmt.Errorf("%s: open gzip: %w", name, err)
		}
		src = zr
	}
	r.count = &countingReader{r: src}
	if src == io.Reader(head) {
		r.count = r.raw
		r.buf = head
	} else {
		r.buf = bufio.NewReaderSize(r.count, bufSize)
	}
	magic, err := r.buf.Peek(4)
	if err != nil {
		if err == io.EOF && len(magic) == 0 {
			return nil, fmt.Errorf("%s: empty file: %w", name, ErrFormat)
		}
		return nil, fmt.Errorf("%s: read header: %w", name, err)
	}
	switch m := binary.LittleEndian.Uint32(magic); m {
	case 0x0A0D0D0A:
		ng, err := pcapgo.NewNgReader(r.buf, pcapgo.NgReaderOptions{WantMixedLinkType: true})
		if err != nil {
			return nil, fmt.Errorf("%s: read pcapng header: %w", name, err)
		}
		r.ng = ng
	case 0xA1B2C3D4, 0xD4C3B2A1, 0xA1B23C4D, 0x4D3CB2A1:
		pf, err := newPcapFile(r.buf)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		r.pcap = pf
		r.link = pf.link
	default:
		return nil, fmt.Errorf("%s: magic %08x: %w", name, m, ErrFormat)
	}
	return r, nil
}

// Next decodes the next flow packet into p. Frames that do not decode are
// counted in Stats by reason and skipped. Next returns io.EOF at the end of
// the file, and a *ReadError when the file is damaged; every packet before
// the damage has been returned by then.
func (r *Reader) Next(p *Packet) error {
	for r.done == nil {
		var (
			data []byte
			ts   time.Time
			wire int
			link = r.link
		)
		if r.pcap != nil {
			var err error
			if data, err = r.pcap.next(); err != nil {
				// A classic pcap record that fails leaves off at its start.
				r.finish(r.pcap.off+int64(r.pcap.pending), err)
				break
			}
			ts, wire = r.pcap.ts, r.pcap.wire
		} else {
			offset := r.count.n.Load() - int64(r.buf.Buffered())
			d, ci, err := r.readNg()
			if err != nil {
				r.finish(offset, err)
				break
			}
			data, ts, wire, link = d, ci.Timestamp, ci.Length, r.ngLink(ci.InterfaceIndex)
		}
		if r.filter != nil && !r.filter.Keep(data) {
			r.stats.Filtered++
			continue
		}
		if r.taker != nil {
			r.frame = Frame{Data: data, Link: link, Wire: wire, Time: ts}
			taken, err := r.taker.TakeFrame(&r.frame)
			if err != nil {
				r.done = err
				break
			}
			if taken {
				r.stats.Packets++
				r.stats.Bytes += uint64(wire)
				r.stats.Link[linkClassOf(link)]++
				r.stats.Taken++
				continue
			}
		}
		reason := r.dec.Decode(p, link, data, wire, ts)
		if p.Fragment != NotFragment && r.defrag != nil && Defragments(reason) {
			ok, err := DefragTake(p, data, reason, &r.stats, r.defrag, r.dtaker)
			if err != nil {
				r.done = err
				break
			}
			if ok {
				return nil
			}
			continue
		}
		r.stats.Count(p, reason)
		if reason == ReasonNone {
			return nil
		}
	}
	return r.done
}

// Frame is one record of a capture file as read, before it is decoded.
type Frame struct {
	Data []byte // the captured bytes; valid until the next read
	Link uint16 // the link type Decode takes
	Wire int    // the frame's length on the wire
	Time time.Time
}

// NextFrame reads the next record into f without decoding it: what Next
// reads before it decodes, with no filter, reassembly or counting, so
// that the reading can be timed apart from the decoding
// (scripts/bench-stages.sh). It returns io.EOF at the end of the file
// and a *ReadError when the file is damaged. Its read is Next's written
// again, not shared through a helper: a helper returning the frame is not
// inlined, and made BenchmarkReaderNext about 25% slower.
func (r *Reader) NextFrame(f *Frame) error {
	if r.done != nil {
		return r.done
	}
	if r.pcap != nil {
		data, err := r.pcap.next()
		if err != nil {
			r.finish(r.pcap.off+int64(r.pcap.pending), err)
			return r.done
		}
		*f = Frame{Data: data, Link: r.link, Wire: r.pcap.wire, Time: r.pcap.ts}
		return nil
	}
	offset := r.count.n.Load() - int64(r.buf.Buffered())
	data, ci, err := r.readNg()
	if err != nil {
		r.finish(offset, err)
		return r.done
	}
	*f = Frame{Data: data, Link: r.ngLink(ci.InterfaceIndex), Wire: ci.Length, Time: ci.Timestamp}
	return nil
}

// SetFilter has only the frames f keeps read from now on (nil: every
// frame); the others are counted in Stats.Filtered, and nowhere else.
func (r *Reader) SetFilter(f *Filter) { r.filter = f }

// SetFrameTaker has the frames read from now on offered to t before they
// are decoded (nil: none).
func (r *Reader) SetFrameTaker(t FrameTaker) {
	r.taker = t
	r.dtaker, _ = t.(DatagramTaker)
}

// SetDecodeOptions has the packets read from now on decoded with o
// (DefaultDecodeOptions until then).
func (r *Reader) SetDecodeOptions(o DecodeOptions) { r.dec = o.Compiled() }

// finish ends the reading: at io.EOF cleanly, at any other error with a
// ReadError naming the record's offset.
func (r *Reader) finish(offset int64, err error) {
	if err == io.EOF {
		r.done = io.EOF
		return
	}
	r.done = &ReadError{Name: r.name, Offset: offset, Packets: r.stats.Packets, Err: err}
}

// readNg reads the next pcapng record.
func (r *Reader) readNg() ([]byte, gopacket.CaptureInfo, error) {
	data, ci, err := r.ng.ZeroCopyReadPacketData()
	switch {
	case err == io.EOF && r.count.err != nil && r.count.err != io.EOF:
		// pcapgo calls any failure at a block's start a clean end, so a
		// gzip stream cut between two blocks, or missing its trailer,
		// would read as a whole file.
		return nil, ci, fmt.Errorf("read: %w", r.count.err)
	case err == io.ErrUnexpectedEOF:
		// A block cut short: pcapgo has read part of it, and returns
		// none of it, as capinfos counts none of it.
		return nil, ci, fmt.Errorf("last block cut short: %w", err)
	}
	return data, ci, err
}

func (r *Reader) ngLink(iface int) uint16 {
	in, err := r.ng.Interface(iface)
	if err != nil {
		return 0xFFFF // no such interface: decodes as an unsupported link
	}
	return uint16(in.LinkType)
}

// SetDefragmenter has the reader hand its fragments to d (DefragSource).
func (r *Reader) SetDefragmenter(d Defragmenter) { r.defrag = d }

// Stats returns the reader's counters. They change as Next is called.
func (r *Reader) Stats() *Stats { return &r.stats }

// Name returns the name the reader was opened with.
func (r *Reader) Name() string { return r.name }

// Progress reports the bytes of the file read so far and its size (-1 when
// unknown, as for stdin). Safe to call from another goroutine.
func (r *Reader) Progress() (read, total int64) { return r.raw.n.Load(), r.total }

// Close closes the file Open opened.
func (r *Reader) Close() error {
	if r.closer != nil {
		return r.closer.Close()
	}
	return nil
}

// countingReader counts the bytes read through it, for offsets and
// progress, and keeps the error that ended them.
type countingReader struct {
	r   io.Reader
	n   atomic.Int64
	err error // first error from r; read only by the reading goroutine
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}
