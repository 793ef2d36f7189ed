package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"time"
)

// pcapFile reads the classic pcap format straight out of the read buffer,
// or out of the file's mapping (pcapmap.go): a record that fits the buffer
// is returned as a slice of it, without a copy. It is written here rather than taken from pcapgo because pcapgo
// rejects files libpcap reads (minor versions other than 4, records whose
// captured length exceeds the original length, as tcpdump's own test files
// have) and copies every packet.
type pcapFile struct {
	br      *bufio.Reader
	order   binary.ByteOrder
	swap    bool // big-endian: the record headers' fields are byte-swapped
	nanos   bool
	swapped lengthOrder
	snaplen uint32
	link    uint16
	ts      time.Time // the last record's timestamp
	wire    int       // the last record's length on the wire
	pending int       // bytes of the records returned still to discard
	// win is the rest of the buffered bytes, after the records returned:
	// a record whole in it is returned without a call into the buffer,
	// where two Peeks and a Discard a packet cost a replay measurable time
	// (docs/results/pipeline.md, "What stands between this and 5 Mpps on
	// one core", the reading row).
	win []byte
	off int64  // offset of the pending bytes: off+pending is the next record's
	big []byte // records larger than the buffer
	// m is the file's mapping when the records are read from it in
	// place (pcapmap.go); nil when they are read through br.
	m *fileMap
}

// lengthOrder says where a record header keeps its captured length.
// Before version 2.3 the captured and original lengths were the other way
// round, and some 2.3 files were written either way; libpcap's sf-pcap.c
// and Wireshark's wiretap both swap them back as below, so a 2.0 file (as
// nDPI's fuzz-2021-10-13.pcap) reads as its captured lengths say.
type lengthOrder uint8

const (
	lengthsInOrder lengthOrder = iota
	lengthsSwapped             // versions 2.0 to 2.2: original length first
	lengthsMaybe               // version 2.3: swapped when captured > original
)

// maxRecord bounds a record's captured length, as libpcap does, so a
// corrupt length cannot make the reader allocate gigabytes.
const maxRecord = 1 << 18 // 262144, libpcap's MAXIMUM_SNAPLEN

// ErrRecordTooLong is wrapped when a record claims more than maxRecord bytes.
var ErrRecordTooLong = errors.New("record length exceeds 262144 bytes")

func newPcapFile(br *bufio.Reader) (*pcapFile, error) {
	h := make([]byte, 24)
	if _, err := io.ReadFull(br, h); err != nil {
		return nil, fmt.Errorf("read pcap header: %w", noEOF(err))
	}
	f, err := parsePcapHeader(h)
	if err != nil {
		return nil, err
	}
	f.br = br
	return f, nil
}

// parsePcapHeader reads the 24-byte file header h.
func parsePcapHeader(h []byte) (*pcapFile, error) {
	f := &pcapFile{off: 24}
	switch binary.LittleEndian.Uint32(h) {
	case 0xA1B2C3D4:
		f.order = binary.LittleEndian
	case 0xD4C3B2A1:
		f.order = binary.BigEndian
	case 0xA1B23C4D:
		f.order, f.nanos = binary.LittleEndian, true
	case 0x4D3CB2A1:
		f.order, f.nanos = binary.BigEndian, true
	default:
		return nil, ErrFormat
	}
	if major := f.order.Uint16(h[4:]); major != 2 {
		return nil, fmt.Errorf("pcap major version %d: %w", major, ErrFormat)
	}
	switch minor := f.order.Uint16(h[6:]); {
	case minor < 3:
		f.swapped = lengthsSwapped
	case minor == 3:
		f.swapped = lengthsMaybe
	}
	f.swap = f.order == binary.BigEndian
	f.snaplen = f.order.Uint32(h[16:])
	// The upper bits of the link-type field carry FCS length and flags
	// (pcap-linktype(7)); the link type is the low 16 bits.
	f.link = uint16(f.order.Uint32(h[20:]))
	return f, nil
}

// next returns the next record's data, valid until the next call, and
// leaves its timestamp and wire length in f.ts and f.wire. Those are
// fields, not results: a gopacket.CaptureInfo (72 bytes, with fields
// classic pcap has no use for) returned through two calls a packet is a
// visible share of a small-packet replay's time (docs/results/pipeline.md,
// "What stands between this and 5 Mpps on one core", the reading row).
// A record cut short by the end of the input (its header or its data) is
// damage, not a packet: nothing of it is returned, only the error, and
// f.off stays at the record's start. capinfos and tcpdump count such a
// file the same way.
func (f *pcapFile) next() ([]byte, error) {
	if len(f.win) >= 16 {
		h := f.win[:16]
		caplen, wirelen := f.lengths(h)
		if n := 16 + int(caplen); caplen <= maxRecord && n <= len(f.win) {
			f.stamp(h, caplen, wirelen)
			data := f.win[16:n:n]
			f.win = f.win[n:]
			f.pending += n
			if f.m != nil {
				f.m.prefetch(int(f.off) + f.pending)
			}
			return data, nil
		}
	}
	return f.fill()
}

// fill is next for a record that is not whole in the window: it takes
// the records read so far out of the buffer, reads on, and opens a new
// window on the bytes buffered after the record.
func (f *pcapFile) fill() ([]byte, error) {
	if f.m != nil {
		return f.fillMapped()
	}
	f.win = nil
	if f.pending > 0 {
		if _, err := f.br.Discard(f.pending); err != nil {
			return nil, noEOF(err)
		}
		f.off += int64(f.pending)
		f.pending = 0
	}
	h, err := f.br.Peek(16)
	if err != nil {
		if err == io.EOF && len(h) == 0 {
			return nil, io.EOF
		}
		// noEOF, not a blanket ErrUnexpectedEOF: a gzip checksum or disk
		// error under the buffer must keep its own name.
		return nil, fmt.Errorf("record header cut short (%d of 16 bytes): %w", len(h), noEOF(err))
	}
	caplen, wirelen := f.lengths(h)
	if caplen > maxRecord {
		// libpcap refuses such a record without reading it, and so does
		// Wireshark; reading on would only parse garbage as headers.
		return nil, fmt.Errorf("captured length %d: %w", caplen, ErrRecordTooLong)
	}
	f.stamp(h, caplen, wirelen)
	if n := 16 + int(caplen); n <= f.br.Size() {
		b, err := f.br.Peek(n)
		if err != nil {
			return nil, cutShort(caplen, len(b)-16, err)
		}
		f.pending = n
		if all, _ := f.br.Peek(f.br.Buffered()); len(all) > n {
			f.win = all[n:]
		}
		return b[16:n:n], nil
	}
	// Longer than the buffer: copy.
	if cap(f.big) < int(caplen) {
		f.big = make([]byte, caplen)
	}
	_, _ = f.br.Discard(16) // peeked above, so it cannot fail
	k, err := io.ReadFull(f.br, f.big[:caplen])
	if err != nil {
		return nil, cutShort(caplen, k, err)
	}
	f.off += 16 + int64(caplen)
	return f.big[:caplen], nil
}

// u32 reads a record header's field. Not f.order.Uint32: an interface
// call a field, four a packet, that the compiler cannot inline.
func (f *pcapFile) u32(b []byte) uint32 {
	v := binary.LittleEndian.Uint32(b)
	if f.swap {
		v = bits.ReverseBytes32(v)
	}
	return v
}

// lengths reads a record header's captured and original lengths.
func (f *pcapFile) lengths(h []byte) (caplen, wirelen uint32) {
	caplen, wirelen = f.u32(h[8:]), f.u32(h[12:])
	if f.swapped == lengthsSwapped || f.swapped == lengthsMaybe && caplen > wirelen {
		caplen, wirelen = wirelen, caplen
	}
	return caplen, wirelen
}

// stamp sets the record's timestamp and wire length from its header.
func (f *pcapFile) stamp(h []byte, caplen, wirelen uint32) {
	sec, frac := f.u32(h[0:]), f.u32(h[4:])
	if !f.nanos {
		frac *= 1000
	}
	f.ts = time.Unix(int64(sec), int64(frac)).UTC()
	f.wire = int(max(wirelen, caplen)) // never less than what was captured
}

// cutShort is the error for a record whose data ends after got bytes.
func cutShort(caplen uint32, got int, err error) error {
	return fmt.Errorf("last record of %d bytes cut short after %d: %w", caplen, got, noEOF(err))
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
