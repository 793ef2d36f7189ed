package defrag

import (
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

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/testutil/sharedpcaps"
)

// readAll reads src to its end and returns the packets it handed on.
func readAll(t *testing.T, src capture.Source) []capture.Packet {
	t.Helper()
	var ps []capture.Packet
	var p capture.Packet
	for {
		err := src.Next(&p)
		if errors.Is(err, io.EOF) {
			return ps
		}
		if err != nil {
			t.Fatal(err)
		}
		q := p
		q.Payload = nil
		ps = append(ps, q)
	}
}

func openDefrag(t *testing.T, names ...string) (*capture.Files, *Reassembler) {
	t.Helper()
	src, err := capture.OpenFiles(names...)
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { src.Close() })
	r := newR(t, DefaultConfig())
	src.SetDefragmenter(r)
	return src, r
}

// TestReaderFragmentedDNS: the reader with a reassembler hands on the
// five packets Zeek sees in Zeek's fragmented DNS trace (its
// core.ipv6-frag baseline: UDP lengths 81, 331, 82, 82 and 3238), the
// four fragments of the long answer counted as taken, not decoded.
func TestReaderFragmentedDNS(t *testing.T) {
	src, _ := openDefrag(t, filepath.Join(sharedpcaps.Dir(t), "zeek/ipv6-fragmented-dns.pcap"))
	ps := readAll(t, src)
	var lens []uint32
	for _, p := range ps {
		lens = append(lens, p.PayloadLen+8)
	}
	if want := []uint32{81, 331, 82, 82, 3238}; !equal(lens, want) {
		t.Errorf("UDP lengths %v, Zeek's %v", lens, want)
	}
	st := src.Stats()
	if st.Packets != 8 || st.Decoded != 5 || st.Defrag.Fragments != 4 || st.Defrag.Datagrams != 1 || st.Transport[capture.TransportFragment] != 0 {
		t.Errorf("stats %+v", st)
	}
}

func equal(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestAtomicFragments: IPv6 atomic fragments (a fragment header with
// offset 0 and no more, RFC 6946) are packets as they are, as to Zeek:
// none is taken, every frame of the trace is decoded.
func TestAtomicFragments(t *testing.T) {
	src, r := openDefrag(t, filepath.Join(sharedpcaps.Dir(t), "zeek/ipv6-http-atomic-frag.pcap"))
	ps := readAll(t, src)
	st := src.Stats()
	if len(ps) != 38 || st.Decoded != 38 || st.Defrag.Fragments != 0 || r.InProgress() != 0 {
		t.Errorf("%d packets handed on, stats %+v", len(ps), st)
	}
}

// TestFilesShareTheReassembler: a datagram whose fragments are in two
// files read as one source is whole.
func TestFilesShareTheReassembler(t *testing.T) {
	d := ip4(srcA, dstA, 21, capture.ProtoUDP, nil, udp(7, 8, 2500, 1))
	fs := frames4(d, split(len(d)-20, 1480))
	var names []string
	for _, f := range fs {
		names = append(names, writePcap(t, f))
	}
	src, _ := openDefrag(t, names...)
	ps := readAll(t, src)
	if len(ps) != 1 || ps[0].PayloadLen != 2500 || ps[0].Directed().DstPort != 8 {
		t.Fatalf("%d packets, %+v", len(ps), ps)
	}
	if st := src.Stats(); st.Packets != 2 || st.Decoded != 1 || st.Defrag.Fragments != 2 {
		t.Errorf("stats %+v", st)
	}
}

// writePcap writes frames, a millisecond apart, to a new pcap file.
func writePcap(t *testing.T, frames ...[]byte) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "f.pcap")
	out, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w := pcapgo.NewWriter(out)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		ci := gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(i) * time.Millisecond), CaptureLength: len(f), Length: len(f)}
		if err := w.WritePacket(ci, f); err != nil {
			t.Fatal(err)
		}
	}
	return name
}

// TestTinyFirstFragment: a first fragment of 8 bytes, too short for the
// TCP header's flags (the header split over two fragments, an old
// evasion), is still a piece of its datagram: the SYN is whole, as Zeek
// sees it. Without a reassembler the reader skips it as truncated.
func TestTinyFirstFragment(t *testing.T) {
	tcp := make([]byte, 20+40)
	binary.BigEndian.PutUint16(tcp[0:], 40000)
	binary.BigEndian.PutUint16(tcp[2:], 443)
	tcp[12], tcp[13] = 5<<4, 0x02 // data offset 5, SYN
	d := ip4(srcA, dstA, 77, capture.ProtoTCP, nil, tcp)
	name := writePcap(t, frames4(d, []piece{{off: 0, n: 8, more: true}, {off: 8, n: 52}})...)
	src, _ := openDefrag(t, name)
	ps := readAll(t, src)
	if len(ps) != 1 || !ps[0].HasTCP || ps[0].Flags != capture.SYN || ps[0].Directed().DstPort != 443 || ps[0].PayloadLen != 40 {
		t.Fatalf("%d packets: %+v", len(ps), ps)
	}
	if st := src.Stats(); st.Defrag.Fragments != 2 || st.Decoded != 1 || st.Skipped[capture.ReasonTransportTruncated] != 0 {
		t.Errorf("stats %+v", st)
	}
	plain, err := capture.OpenFiles(name)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	readAll(t, plain)
	if st := plain.Stats(); st.Skipped[capture.ReasonTransportTruncated] != 1 {
		t.Errorf("without a reassembler: stats %+v", st)
	}
}
