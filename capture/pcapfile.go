package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gopacket/gopacket"
)

// pcapFile reads the classic pcap format straight out of the read buffer:
// a record that fits the buffer is returned as a slice of it, without a
// copy. It is written here rather than taken from pcapgo because pcapgo
// rejects files libpcap reads (minor versions other than 4, records whose
// captured length exceeds the original length, as tcpdump's own test files
// have) and copies every packet.
type pcapFile struct {
	br      *bufio.Reader
	order   binary.ByteOrder
	nanos   bool
	snaplen uint32
	link    uint16
	pending int    // bytes of the last record still to discard
	off     int64  // offset of the record after the pending one
	trailer error  // damage found while returning the last record
	big     []byte // records larger than the buffer
}

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
	f := &pcapFile{br: br, off: 24}
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
	f.snaplen = f.order.Uint32(h[16:])
	// The upper bits of the link-type field carry FCS length and flags
	// (pcap-linktype(7)); the link type is the low 16 bits.
	f.link = uint16(f.order.Uint32(h[20:]))
	return f, nil
}

// next returns the next record. The data is valid until the next call.
// A last record cut short by the end of the file is returned with what it
// holds, and the next call reports the damage.
func (f *pcapFile) next() ([]byte, gopacket.CaptureInfo, error) {
	var ci gopacket.CaptureInfo
	if f.trailer != nil {
		return nil, ci, f.trailer
	}
	if f.pending > 0 {
		if _, err := f.br.Discard(f.pending); err != nil {
			return nil, ci, noEOF(err)
		}
		f.off += int64(f.pending)
		f.pending = 0
	}
	h, err := f.br.Peek(16)
	if err != nil {
		if err == io.EOF && len(h) == 0 {
			return nil, ci, io.EOF
		}
		return nil, ci, fmt.Errorf("record header cut short (%d of 16 bytes): %w", len(h), io.ErrUnexpectedEOF)
	}
	sec, frac := f.order.Uint32(h[0:]), f.order.Uint32(h[4:])
	caplen, wirelen := f.order.Uint32(h[8:]), f.order.Uint32(h[12:])
	if !f.nanos {
		frac *= 1000
	}
	ci.Timestamp = time.Unix(int64(sec), int64(frac)).UTC()
	ci.CaptureLength = int(caplen)
	ci.Length = int(max(wirelen, caplen)) // never less than what was captured
	if n := 16 + int(caplen); caplen <= maxRecord && n <= f.br.Size() {
		b, err := f.br.Peek(n)
		f.pending = len(b)
		if err != nil {
			return f.cutShort(b[16:], ci, caplen)
		}
		return b[16:], ci, nil
	}
	// Longer than the buffer: copy. Read no more than libpcap would take.
	f.br.Discard(16)
	f.off += 16
	want := min(caplen, maxRecord)
	if cap(f.big) < int(want) {
		f.big = make([]byte, want)
	}
	k, err := io.ReadFull(f.br, f.big[:want])
	f.off += int64(k)
	if err != nil {
		f.off -= 16 + int64(k) // the damage is at the record's start
		return f.cutShort(f.big[:k], ci, caplen)
	}
	if caplen > maxRecord {
		f.off -= 16 + int64(k)
		return nil, ci, fmt.Errorf("captured length %d: %w", caplen, ErrRecordTooLong)
	}
	return f.big[:k], ci, nil
}

// cutShort returns what a record cut short by the end of the file holds,
// and keeps the error for the next call. f.off stays at the record.
func (f *pcapFile) cutShort(data []byte, ci gopacket.CaptureInfo, caplen uint32) ([]byte, gopacket.CaptureInfo, error) {
	f.trailer = fmt.Errorf("last record of %d bytes cut short after %d: %w", caplen, len(data), io.ErrUnexpectedEOF)
	f.pending = 0
	ci.CaptureLength = len(data)
	return data, ci, nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
