//go:build linux

package defrag

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/capture/afpacket"
	"github.com/flowmon/flowmon/internal/testutil/netnstest"
	"github.com/flowmon/flowmon/internal/testutil/sharedpcaps"
)

// packetLine is what a test compares of a packet handed on.
func packetLine(p *capture.Packet) string {
	return fmt.Sprintf("%v %d %v", p.Directed(), p.PayloadLen, p.Fragment)
}

// TestAFPacketReassembles: real fragment traces sent through a veth pair
// and captured by an AF_PACKET socket with a reassembler give the
// packets the file reader with one gives: the datagrams whole, each
// once, and the fragments counted as taken.
func TestAFPacketReassembles(t *testing.T) {
	dir := sharedpcaps.Dir(t)
	traces := []string{"zeek/ipv6-fragmented-dns.pcap", "arkime/socks5-http-302-frag.pcap", "zeek/ipv4/fragmented-4.pcap"}
	var want []string
	var wantFrags uint64
	for _, tr := range traces {
		src, _ := openDefrag(t, filepath.Join(dir, tr))
		for _, p := range readAll(t, src) {
			want = append(want, packetLine(&p))
		}
		wantFrags += src.Stats().Defrag.Fragments
	}

	n := netnstest.New(t)
	var socks []*afpacket.Socket
	if err := n.Do(func() (err error) {
		socks, err = afpacket.Open(afpacket.Config{Iface: n.B, BlockSize: 1 << 20, BlockCount: 8, BlockTimeout: 10 * time.Millisecond}, 1)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	s := socks[0]
	t.Cleanup(func() { s.Close() })
	s.SetDefragmenter(newR(t, DefaultConfig()))
	var sent uint64
	for _, tr := range traces {
		st, err := n.Send(n.A, filepath.Join(dir, tr), netnstest.SendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sent += st.Packets
	}
	var got []string
	var p capture.Packet
	deadline := time.Now().Add(20 * time.Second) // a bound for liveness only
	for s.Stats().Packets < sent && time.Now().Before(deadline) {
		switch err := s.Next(&p); {
		case err == nil:
			got = append(got, packetLine(&p))
		case !errors.Is(err, capture.ErrNoPacket):
			t.Fatal(err)
		}
	}
	st := s.Stats()
	if st.Packets != sent {
		t.Fatalf("read %d frames of the %d sent", st.Packets, sent)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("AF_PACKET handed on\n%v\nthe file reader\n%v", got, want)
	}
	if st.Defrag.Fragments != wantFrags || st.Defrag.Datagrams == 0 {
		t.Errorf("defrag %+v, want %d fragments taken", st.Defrag, wantFrags)
	}
	t.Logf("%d frames, %d packets; defrag %+v", st.Packets, len(got), st.Defrag)
}
