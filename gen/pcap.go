package gen

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// The pcap format written (libpcap 2.4, little endian, microseconds):
//
//	global header, 24 bytes:
//	offset size field
//	0      4    magic 0xa1b2c3d4 (written d4 c3 b2 a1: little endian, µs timestamps)
//	4      2    version major 2
//	6      2    version minor 4
//	8      4    thiszone 0
//	12     4    sigfigs 0
//	16     4    snaplen (Options.Snaplen, or 65535)
//	20     4    link type (1 Ethernet, 101 raw IP)
//
//	each record, 16-byte header then incl_len bytes:
//	0      4    ts_sec
//	4      4    ts_usec
//	8      4    incl_len = min(orig_len, snaplen)
//	12     4    orig_len
//
// pcap carries no checksum of its own; the packets carry theirs.
const (
	pcapMagicMicro = 0xa1b2c3d4
	pcapHeaderLen  = 24
	pcapRecordLen  = 16
	pcapSnapDef    = 65535
)

// appendPcapHeader appends the 24-byte global header.
func appendPcapHeader(b []byte, snaplen int, link LinkType) []byte {
	if snaplen <= 0 {
		snaplen = pcapSnapDef
	}
	b = binary.LittleEndian.AppendUint32(b, pcapMagicMicro)
	b = binary.LittleEndian.AppendUint16(b, 2)
	b = binary.LittleEndian.AppendUint16(b, 4)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(snaplen))
	return binary.LittleEndian.AppendUint32(b, uint32(link))
}

// recordWriter writes pcap records through a buffer; the record header
// lives in the struct so that writing a packet does not allocate.
type recordWriter struct {
	w   *bufio.Writer
	hdr [pcapRecordLen]byte
}

// write writes p as one pcap record.
func (rw *recordWriter) write(p *Packet) error {
	h := &rw.hdr
	binary.LittleEndian.PutUint32(h[0:], uint32(p.us/1e6))
	binary.LittleEndian.PutUint32(h[4:], uint32(p.us%1e6))
	binary.LittleEndian.PutUint32(h[8:], uint32(len(p.Data)))
	binary.LittleEndian.PutUint32(h[12:], uint32(p.Length))
	if _, err := rw.w.Write(h[:]); err != nil {
		return err
	}
	_, err := rw.w.Write(p.Data)
	return err
}

// Generate writes the trace described by opt to pcap and, when truth is
// not nil, the ground truth (one JSON line per flow, in the order flows
// end) to truth.
func Generate(pcap, truth io.Writer, opt Options) (Stats, error) {
	g, err := New(opt)
	if err != nil {
		return Stats{}, err
	}
	return g.WriteTo(pcap, truth)
}

// WriteTo runs g to the end, writing the pcap and the truth sidecar.
func (g *Generator) WriteTo(pcap, truth io.Writer) (Stats, error) {
	pw := bufio.NewWriterSize(pcap, 1<<20)
	rw := &recordWriter{w: pw}
	if _, err := pw.Write(appendPcapHeader(nil, g.opt.Snaplen, g.opt.Link)); err != nil {
		return g.stats, fmt.Errorf("write pcap header: %w", err)
	}
	var tw *bufio.Writer
	if truth != nil {
		tw = bufio.NewWriterSize(truth, 1<<16)
		line := make([]byte, 0, 512)
		g.SetTruthFunc(func(t *Truth) {
			line = append(t.AppendJSON(line[:0]), '\n')
			_, _ = tw.Write(line) // a write error sticks in tw and is returned by Flush
		})
	}
	var p Packet
	for n := 0; g.Next(&p); n++ {
		if err := rw.write(&p); err != nil {
			return g.stats, fmt.Errorf("write pcap record: %w", err)
		}
		if tw != nil && n&0xffff == 0 { // surface a sticky truth write error early
			if _, err := tw.Write(nil); err != nil {
				return g.stats, fmt.Errorf("write truth: %w", err)
			}
		}
	}
	if err := pw.Flush(); err != nil {
		return g.stats, fmt.Errorf("write pcap: %w", err)
	}
	if tw != nil {
		if err := tw.Flush(); err != nil {
			return g.stats, fmt.Errorf("write truth: %w", err)
		}
	}
	return g.stats, nil
}
