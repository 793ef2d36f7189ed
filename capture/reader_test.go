package capture

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/flowmon/flowmon/internal/testutil/cputime"
)

// pcapBytes writes a classic pcap by hand, in either byte order and
// timestamp resolution, so the test does not trust the writer it tests
// against.
func pcapBytes(order binary.ByteOrder, nanos bool, link uint32, frames [][]byte) []byte {
	var b bytes.Buffer
	h := make([]byte, 24)
	magic := uint32(0xA1B2C3D4)
	if nanos {
		magic = 0xA1B23C4D
	}
	order.PutUint32(h[0:], magic)
	order.PutUint16(h[4:], 2)
	order.PutUint16(h[6:], 4)
	order.PutUint32(h[16:], 65535)
	order.PutUint32(h[20:], link)
	b.Write(h)
	for i, f := range frames {
		r := make([]byte, 16)
		order.PutUint32(r[0:], uint32(1700000000+i))
		frac := uint32(i * 1000) // i ms
		if nanos {
			frac *= 1000
		}
		order.PutUint32(r[4:], frac)
		order.PutUint32(r[8:], uint32(len(f)))
		order.PutUint32(r[12:], uint32(len(f)))
		b.Write(r)
		b.Write(f)
	}
	return b.Bytes()
}

func testFrames(t testing.TB, n int) [][]byte {
	var fs [][]byte
	for i := range n {
		fs = append(fs, frame(t, eth(layers.EthernetTypeIPv4), ip4("10.0.0.1", "10.0.0.2", layers.IPProtocolTCP),
			tcp(uint16(1000+i), 80, true, false), gopacket.Payload(make([]byte, i*7%300))))
	}
	return fs
}

func readBytes(t *testing.T, data []byte) ([]Packet, *Stats, error) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data), "test", int64(len(data)))
	if err != nil {
		return nil, nil, err
	}
	var out []Packet
	for {
		var p Packet
		if err := r.Next(&p); err != nil {
			if err == io.EOF {
				err = nil
			}
			return out, r.Stats(), err
		}
		p.Payload = nil // points into the reader's buffer
		out = append(out, p)
	}
}

func TestReaderByteOrdersAndResolutions(t *testing.T) {
	frames := testFrames(t, 20)
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		for _, nanos := range []bool{false, true} {
			ps, st, err := readBytes(t, pcapBytes(order, nanos, 1, frames))
			if err != nil || len(ps) != 20 || st.Packets != 20 {
				t.Fatalf("%v nanos=%v: %d packets, err %v", order, nanos, len(ps), err)
			}
			for i, p := range ps {
				want := time.Unix(int64(1700000000+i), int64(i)*int64(time.Millisecond))
				if !p.Timestamp.Equal(want) || p.Directed().SrcPort != uint16(1000+i) {
					t.Fatalf("%v nanos=%v packet %d: ts %v port %d", order, nanos, i, p.Timestamp, p.Directed().SrcPort)
				}
			}
		}
	}
}

func TestReaderTruncatedFile(t *testing.T) {
	frames := testFrames(t, 10)
	full := pcapBytes(binary.LittleEndian, false, 1, frames)
	// Offsets of each record.
	offs := []int64{24}
	for _, f := range frames {
		offs = append(offs, offs[len(offs)-1]+16+int64(len(f)))
	}
	// Cut inside record 6's header: 6 packets, then damage at its offset.
	ps, _, err := readBytes(t, full[:offs[6]+7])
	var re *ReadError
	if len(ps) != 6 || !errors.As(err, &re) || re.Offset != offs[6] || re.Packets != 6 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("cut in header: %d packets, err %v", len(ps), err)
	}
	// Cut inside record 6's data: a record cut short is damage, not a
	// packet, as capinfos counts it; the error names the record's start.
	ps, st, err := readBytes(t, full[:offs[6]+16+60])
	if len(ps) != 6 || st.Packets != 6 || !errors.As(err, &re) || re.Offset != offs[6] || re.Packets != 6 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("cut in data: %d packets, err %v", len(ps), err)
	}
	// A cut exactly between records is a clean end.
	ps, _, err = readBytes(t, full[:offs[6]])
	if len(ps) != 6 || err != nil {
		t.Fatalf("cut between records: %d packets, err %v", len(ps), err)
	}
	// A length beyond any record's is refused without reading it, whether
	// or not the file holds that many bytes after it.
	bad := append([]byte(nil), full...)
	binary.LittleEndian.PutUint32(bad[offs[3]+8:], 1<<30)
	for _, data := range [][]byte{bad, append(bad, make([]byte, 300000)...)} {
		_, st, err = readBytes(t, data)
		if st.Packets != 3 || !errors.As(err, &re) || re.Offset != offs[3] || re.Packets != 3 || !errors.Is(err, ErrRecordTooLong) {
			t.Fatalf("corrupt length: %d records, err %v", st.Packets, err)
		}
	}
}

// TestReaderSwappedLengths reads version 2.0-2.3 files, whose record
// headers put the original length before the captured one (libpcap's
// sf-pcap.c swaps them back for 2.0-2.2 always, and for 2.3 when the
// captured length is the larger).
func TestReaderSwappedLengths(t *testing.T) {
	frames := testFrames(t, 3)
	for _, minor := range []uint16{0, 2, 3} {
		data := pcapBytes(binary.LittleEndian, false, 1, frames)
		binary.LittleEndian.PutUint16(data[6:], minor)
		// Snap each frame's original length to 1500 and write it first.
		off := 24
		for _, f := range frames {
			binary.LittleEndian.PutUint32(data[off+8:], 1500)
			binary.LittleEndian.PutUint32(data[off+12:], uint32(len(f)))
			off += 16 + len(f)
		}
		ps, st, err := readBytes(t, data)
		if err != nil || len(ps) != 3 || st.Packets != 3 || int(ps[2].CapLen) != len(frames[2]) || ps[2].WireLen != 1500 {
			t.Fatalf("minor %d: %d packets, err %v", minor, len(ps), err)
		}
	}
}

func TestReaderGzipAndStdinStyle(t *testing.T) {
	raw := pcapBytes(binary.LittleEndian, true, 1, testFrames(t, 50))
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(raw)
	zw.Close()
	ps, _, err := readBytes(t, z.Bytes())
	if err != nil || len(ps) != 50 {
		t.Fatalf("gzip: %d packets, err %v", len(ps), err)
	}
	// A cut gzip stream: the packets before the cut, then a ReadError.
	ps, _, err = readBytes(t, z.Bytes()[:z.Len()/2])
	var re *ReadError
	if len(ps) == 0 || len(ps) >= 50 || !errors.As(err, &re) {
		t.Fatalf("cut gzip: %d packets, err %v", len(ps), err)
	}
	// Open on a file name, including .gz on disk.
	dir := t.TempDir()
	name := filepath.Join(dir, "x.pcap.gz")
	os.WriteFile(name, z.Bytes(), 0o644)
	st, err := readAll(name)
	if err != nil || st.Packets != 50 {
		t.Fatalf("Open gz: %v %v", st, err)
	}
}

func TestReaderPcapngMixedLinkTypes(t *testing.T) {
	var b bytes.Buffer
	w, err := pcapgo.NewNgWriterInterface(&b, pcapgo.NgInterface{LinkType: layers.LinkTypeEthernet, SnapLength: 65535}, pcapgo.DefaultNgWriterOptions)
	if err != nil {
		t.Fatal(err)
	}
	rawID, err := w.AddInterface(pcapgo.NgInterface{LinkType: layers.LinkTypeRaw, SnapLength: 65535})
	if err != nil {
		t.Fatal(err)
	}
	e := frame(t, eth(layers.EthernetTypeIPv4), ip4("10.0.0.1", "10.0.0.2", layers.IPProtocolUDP), udp(1, 2))
	r := frame(t, ip6("2001:db8::1", "2001:db8::2", layers.IPProtocolUDP), udp(3, 4))
	ts := time.Unix(1700000000, 0)
	w.WritePacket(gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(e), Length: len(e), InterfaceIndex: 0}, e)
	w.WritePacket(gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(r), Length: len(r), InterfaceIndex: rawID}, r)
	w.Flush()
	ps, st, err := readBytes(t, b.Bytes())
	if err != nil || len(ps) != 2 {
		t.Fatalf("%d packets, err %v", len(ps), err)
	}
	if ps[0].LinkType != LinkEthernet || ps[0].Directed().DstPort != 2 || ps[1].LinkType != LinkRaw || ps[1].Directed().DstPort != 4 || st.Network[NetIPv6] != 1 {
		t.Fatalf("decoded %+v / %+v", ps[0], ps[1])
	}
}

func TestReaderRejectsNonCaptures(t *testing.T) {
	for _, data := range [][]byte{nil, []byte("GET / HTTP/1.1\r\n"), {0xd4, 0xc3, 0xb2, 0xa1, 9, 0}} {
		if _, _, err := readBytes(t, data); err == nil {
			t.Errorf("%q: no error", data)
		}
	}
}

func TestReaderNextNoAllocs(t *testing.T) {
	frames := testFrames(t, 1)
	one := pcapBytes(binary.LittleEndian, false, 1, frames)
	many := append([]byte(nil), one...)
	for range 2000 {
		many = append(many, one[24:]...)
	}
	r, err := NewReader(bytes.NewReader(many), "x", -1)
	if err != nil {
		t.Fatal(err)
	}
	var p Packet
	if n := testing.AllocsPerRun(1000, func() {
		if err := r.Next(&p); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("Next allocates %v times per packet", n)
	}
}

// BenchmarkReaderNext reads and decodes an in-memory pcap of 4096
// Ethernet/IPv4/TCP frames, over and over: the file path's per-packet cost
// without the disk.
func BenchmarkReaderNext(b *testing.B) {
	frames := testFrames(b, 4096)
	data := pcapBytes(binary.LittleEndian, false, 1, frames)
	src := bytes.NewReader(data)
	r, err := NewReader(src, "bench", -1)
	if err != nil {
		b.Fatal(err)
	}
	var p Packet
	b.ReportAllocs()
	b.SetBytes(int64(len(data)) / 4096)
	m := cputime.Start()
	for b.Loop() {
		if err := r.Next(&p); err != nil {
			src.Reset(data)
			if r, err = NewReader(src, "bench", -1); err != nil {
				b.Fatal(err)
			}
		}
	}
	m.Report(b)
}

// TestOpenMissingFile pins the one wording of an unreadable input, which
// the command line prints as it is: "open capture: " once, then the
// operating system's own "open NAME: ..." error.
func TestOpenMissingFile(t *testing.T) {
	name := filepath.Join(t.TempDir(), "nonexist.pcap")
	_, err := Open(name)
	if want := "open capture: open " + name + ": no such file or directory"; err == nil || err.Error() != want || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err %v, want %q wrapping os.ErrNotExist", err, want)
	}
}

// TestReaderLongRecords: records that fit the read buffer with their
// header are sliced from it and longer ones copied out (up to libpcap's
// 262,144 bytes); both read whole, in order, with their lengths, and a
// long record cut short is damage that says where. A frame here is 54
// bytes of headers and the payload.
func TestReaderLongRecords(t *testing.T) {
	var fs [][]byte
	for _, payload := range []int{10, bufSize / 2, bufSize - 16 - 54, maxRecord - 54, 500} {
		fs = append(fs, frame(t, eth(layers.EthernetTypeIPv4), ip4("10.0.0.1", "10.0.0.2", layers.IPProtocolTCP),
			tcp(uint16(1000+len(fs)), 80, true, false), gopacket.Payload(make([]byte, payload))))
	}
	if n := len(fs[3]); n != maxRecord {
		t.Fatalf("the longest frame is %d bytes, want %d", n, maxRecord)
	}
	data := pcapBytes(binary.LittleEndian, false, 1, fs)
	got, st, err := readBytes(t, data)
	if err != nil || len(got) != len(fs) || st.Decoded != uint64(len(fs)) {
		t.Fatalf("read %d of %d packets (%d decoded), %v", len(got), len(fs), st.Decoded, err)
	}
	for i, p := range got {
		if int(p.CapLen) != len(fs[i]) || p.Key.SrcPort != uint16(1000+i) {
			t.Errorf("packet %d: caplen %d (want %d), source port %d", i, p.CapLen, len(fs[i]), p.Key.SrcPort)
		}
	}
	cut := data[:len(data)-len(fs[4])-16-1000] // the longest record loses its last 1000 bytes
	got, _, err = readBytes(t, cut)
	var re *ReadError
	if len(got) != 3 || !errors.As(err, &re) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("cut file: %d packets, %v", len(got), err)
	}
	t.Logf("cut file: %v", err)
}

// TestNextFrame: the frames NextFrame reads, decoded and counted, are the
// packets Next returns, on a classic pcap and the same frames as pcapng;
// reading a frame allocates nothing.
func TestNextFrame(t *testing.T) {
	data, err := os.ReadFile("../pcaps/sample.pcap")
	if err != nil {
		t.Fatal(err)
	}
	pr, err := pcapgo.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var ng bytes.Buffer
	nw, err := pcapgo.NewNgWriter(&ng, pr.LinkType())
	if err != nil {
		t.Fatal(err)
	}
	for {
		d, ci, err := pr.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := nw.WritePacket(ci, d); err != nil {
			t.Fatal(err)
		}
	}
	nw.Flush()
	for name, b := range map[string][]byte{"pcap": data, "pcapng": ng.Bytes()} {
		t.Run(name, func(t *testing.T) {
			want, err := NewReader(bytes.NewReader(b), name, -1)
			if err != nil {
				t.Fatal(err)
			}
			got, err := NewReader(bytes.NewReader(b), name, -1)
			if err != nil {
				t.Fatal(err)
			}
			var p, q Packet
			var f Frame
			var st Stats
			for {
				err := got.NextFrame(&f)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				r := Decode(&q, f.Link, f.Data, f.Wire, f.Time)
				st.Count(&q, r)
				if r != ReasonNone {
					continue
				}
				if err := want.Next(&p); err != nil {
					t.Fatalf("packet %d: Next: %v", st.Decoded, err)
				}
				if p.Key != q.Key || p.Hash != q.Hash || !p.Timestamp.Equal(q.Timestamp) || p.WireLen != q.WireLen {
					t.Fatalf("packet %d: NextFrame and Decode give %v at %v, Next %v at %v", st.Decoded, q.Key, q.Timestamp, p.Key, p.Timestamp)
				}
			}
			if err := want.Next(&p); err != io.EOF {
				t.Fatalf("Next after the last frame: %v, want io.EOF", err)
			}
			if st.Packets != want.Stats().Packets || st.Decoded != want.Stats().Decoded || st.Packets == 0 {
				t.Fatalf("NextFrame read %d frames (%d decoded), Next %d (%d)", st.Packets, st.Decoded, want.Stats().Packets, want.Stats().Decoded)
			}
			if err := got.NextFrame(&f); err != io.EOF {
				t.Fatalf("NextFrame after the end: %v, want io.EOF", err)
			}
			again, _ := NewReader(bytes.NewReader(b), name, -1)
			if n := testing.AllocsPerRun(100, func() { again.NextFrame(&f) }); n != 0 {
				t.Fatalf("NextFrame allocates %v times a frame", n)
			}
		})
	}
}
