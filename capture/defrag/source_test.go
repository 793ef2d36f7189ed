package defrag

import (
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
	"github.com/flowmon/flowmon/internal/sharedpcaps"
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
	dir := t.TempDir()
	var names []string
	for i, f := range fs {
		name := filepath.Join(dir, string(rune('a'+i))+".pcap")
		out, err := os.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w := pcapgo.NewWriter(out)
		if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
			t.Fatal(err)
		}
		ci := gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(i) * time.Millisecond), CaptureLength: len(f), Length: len(f)}
		if err := w.WritePacket(ci, f); err != nil {
			t.Fatal(err)
		}
		out.Close()
		names = append(names, name)
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
