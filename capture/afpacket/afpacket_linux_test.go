//go:build linux

package afpacket_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/capture/afpacket"
	"github.com/flowmon/flowmon/capture/capturetest"
	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/gen/gentest"
	"github.com/flowmon/flowmon/internal/testutil/netnstest"
)

// These tests run the AF_PACKET source on a real kernel: a generated
// trace is played into one end of a veth pair in a namespace of its own
// (netnstest) and captured on the other, and what was captured is
// compared with reading the same file.

// openIn opens an AF_PACKET capture in n's namespace and closes it when
// t ends.
func openIn(t testing.TB, n *netnstest.Net, c afpacket.Config, workers int) []*afpacket.Socket {
	t.Helper()
	var socks []*afpacket.Socket
	if err := n.Do(func() error {
		var err error
		socks, err = afpacket.Open(c, workers)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, s := range socks {
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		}
	})
	return socks
}

// ringFor is a config whose ring holds all of a trace file, so that no
// packet is dropped however slowly the test reads.
//
// Each frame takes its bytes plus about 100 of header and alignment in
// the ring (its pcap record 16): full blocks of twice the file's size
// would do. But the kernel hands a block over part full when its timeout
// passes, so a slow send spreads the frames over more blocks: with a
// block timeout of 100 ms it takes more than a second of sending (3 to 6
// times what the tests' sends take) before the spare half runs out.
func ringFor(t testing.TB, iface, path string) afpacket.Config {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks := int(2*fi.Size()>>20) + 8
	return afpacket.Config{Iface: iface, BlockSize: 1 << 20, BlockCount: blocks, BlockTimeout: 100 * time.Millisecond}
}

// TestAFPacketVethMatchesFile plays a trace of 3000 flows into a veth
// pair and checks that what 1 and 2 sockets (fanout hash) capture is what
// reading the file gives: the counts by class and every flow's packets
// each way. The ring holds the whole trace, so the kernel drops nothing
// whatever the machine's load, which KernelStats confirms. With 2
// sockets each flow, both directions, is on one socket, and both sockets
// have flows.
func TestAFPacketVethMatchesFile(t *testing.T) {
	path := gentest.Trace(t, 3000, gen.LinkEthernet)
	want := capturetest.FileTally(t, path)
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			n := netnstest.New(t)
			socks := openIn(t, n, ringFor(t, n.B, path), workers)
			var st netnstest.SendStats
			tallies := capturetest.Play(t, socks, func() (err error) {
				st, err = n.Send(n.A, path, netnstest.SendOptions{})
				return err
			})
			t.Logf("sent %v", st)
			got := capturetest.NewTally()
			var ks capture.KernelStats
			for i, ta := range tallies {
				got.Merge(ta)
				k, err := socks[i].KernelStats()
				if err != nil {
					t.Fatal(err)
				}
				ks.Add(k)
				t.Logf("socket %d: %d packets, %d flows; kernel %+v", i, ta.Stats.Packets, len(ta.Flows), k)
				if ta.Stats.Packets == 0 {
					t.Errorf("socket %d received nothing", i)
				}
			}
			if ks.Drops != 0 || ks.Packets != st.Packets {
				t.Errorf("kernel counts %+v, want %d packets and no drop", ks, st.Packets)
			}
			capturetest.Compare(t, got, want)
			if workers > 1 {
				checkFlowsOnOneSocket(t, tallies)
			}
		})
	}
}

// checkFlowsOnOneSocket checks that no flow key is on two sockets, and
// that the TCP flows seen both ways are many: the fanout hash is
// symmetric.
func checkFlowsOnOneSocket(t testing.TB, tallies []*capturetest.Tally) {
	t.Helper()
	on := map[capture.Key]int{}
	both, split := 0, 0
	for i, ta := range tallies {
		for k, c := range ta.Flows {
			if j, ok := on[k]; ok {
				if split++; split <= 5 {
					t.Errorf("flow %v on sockets %d and %d", k, j, i)
				}
			}
			on[k] = i
			if k.Proto == capture.ProtoTCP && c[0] > 0 && c[1] > 0 {
				both++
			}
		}
	}
	if split > 0 {
		t.Errorf("%d flows on more than one socket", split)
	}
	if both < 1000 {
		t.Errorf("only %d TCP flows seen both ways: the test shows little", both)
	}
}

// TestAFPacketFanoutModes checks that cpu and lb fanout deliver every
// packet once over the two sockets.
func TestAFPacketFanoutModes(t *testing.T) {
	path := gentest.Trace(t, 300, gen.LinkEthernet)
	want := capturetest.FileTally(t, path)
	for _, mode := range []string{afpacket.FanoutCPU, afpacket.FanoutLB} {
		t.Run(mode, func(t *testing.T) {
			n := netnstest.New(t)
			c := ringFor(t, n.B, path)
			c.Fanout = mode
			socks := openIn(t, n, c, 2)
			tallies := capturetest.Play(t, socks, func() error {
				_, err := n.Send(n.A, path, netnstest.SendOptions{})
				return err
			})
			got := capturetest.NewTally()
			for _, ta := range tallies {
				got.Merge(ta)
			}
			capturetest.Compare(t, got, want)
			if mode == afpacket.FanoutLB && (tallies[0].Stats.Packets == 0 || tallies[1].Stats.Packets == 0) {
				t.Errorf("lb fanout left a socket empty: %d and %d packets", tallies[0].Stats.Packets, tallies[1].Stats.Packets)
			}
		})
	}
}

// TestAFPacketDrops overflows a ring of two 4 KiB blocks that nobody
// reads: the kernel must report the drops, and what was kept and what
// was dropped must add up to what was sent.
func TestAFPacketDrops(t *testing.T) {
	path := gentest.Trace(t, 100, gen.LinkEthernet)
	n := netnstest.New(t)
	socks := openIn(t, n, afpacket.Config{Iface: n.B, BlockSize: 4096, BlockCount: 2, FrameSize: 2048}, 1)
	st, err := n.Send(n.A, path, netnstest.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := socks[0]
	var p capture.Packet
	for {
		err := s.Next(&p)
		if errors.Is(err, capture.ErrNoPacket) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	ks, err := s.KernelStats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sent %d, read %d, kernel %+v", st.Packets, s.Stats().Packets, ks)
	if ks.Drops == 0 {
		t.Fatalf("no drop reported after %d packets into 8 KiB: %+v", st.Packets, ks)
	}
	if ks.Packets != st.Packets || s.Stats().Packets != ks.Packets-ks.Drops {
		t.Errorf("sent %d, read %d, kernel %+v: read + dropped must be what was sent", st.Packets, s.Stats().Packets, ks)
	}
	if ks.FreezeQueue == 0 {
		t.Errorf("the ring filled but freeze_q_cnt is 0: %+v", ks)
	}
	// The counts are totals: a second read after more drops adds to them.
	if _, err := n.Send(n.A, path, netnstest.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	ks2, err := s.KernelStats()
	if err != nil {
		t.Fatal(err)
	}
	if ks2.Packets != 2*st.Packets || ks2.Drops <= ks.Drops {
		t.Errorf("after a second send: kernel %+v, want %d packets and more than %d drops", ks2, 2*st.Packets, ks.Drops)
	}
}

// TestAFPacketFilter attaches tcpdump's program for "tcp" (ParseBPF):
// the socket gets the file's TCP packets and none of its UDP or ICMP.
func TestAFPacketFilter(t *testing.T) {
	path := gentest.Trace(t, 300, gen.LinkEthernet)
	want := capturetest.FileTally(t, path)
	prog, err := capture.ParseBPF(capturetest.BPFTCP)
	if err != nil {
		t.Fatal(err)
	}
	n := netnstest.New(t)
	c := ringFor(t, n.B, path)
	c.Filter = prog
	socks := openIn(t, n, c, 1)
	tallies := capturetest.Play(t, socks, func() error {
		_, err := n.Send(n.A, path, netnstest.SendOptions{})
		return err
	})
	got := tallies[0]
	tr := got.Stats.TransportCounts()
	wantTCP := want.Stats.TransportCounts()["tcp"]
	if tr["tcp"] != wantTCP || len(tr) != 1 || got.Stats.Packets != wantTCP {
		t.Errorf("captured %v (%d packets), want only the file's %d TCP packets (file: %v)",
			tr, got.Stats.Packets, wantTCP, want.Stats.TransportCounts())
	}
	if want.Stats.TransportCounts()["udp"] == 0 {
		t.Fatal("the trace has no UDP: the test shows nothing")
	}
	for k, c := range want.Flows {
		if k.Proto == capture.ProtoTCP && got.Flows[k] != nil && *got.Flows[k] != *c {
			t.Errorf("flow %v: captured %v, file %v", k, *got.Flows[k], *c)
		}
	}
}

// TestAFPacketNoAllocs fills a ring of 64 KiB blocks, then checks that
// Next, crossing blocks and giving them back, allocates nothing.
func TestAFPacketNoAllocs(t *testing.T) {
	path := gentest.Trace(t, 300, gen.LinkEthernet)
	n := netnstest.New(t)
	c := ringFor(t, n.B, path)
	c.BlockSize, c.BlockCount = 64<<10, c.BlockCount*16
	s := openIn(t, n, c, 1)[0]
	st, err := n.Send(n.A, path, netnstest.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * c.BlockTimeout) // the last block retires
	capturetest.CheckNextNoAllocs(t, s, int(st.Packets))
}

// TestAFPacketClose closes a socket from another goroutine while Next
// waits in poll with a long block timeout: Next must return io.EOF at
// once, not after the timeout; then Close again is a no-op, Next stays at
// io.EOF and KernelStats keeps its totals.
func TestAFPacketClose(t *testing.T) {
	n := netnstest.New(t)
	socks := openIn(t, n, afpacket.Config{Iface: n.B, BlockTimeout: 5 * time.Second, BlockSize: 1 << 16, BlockCount: 4}, 1)
	s := socks[0]
	done := make(chan error)
	go func() {
		var p capture.Packet
		for {
			err := s.Next(&p)
			if !errors.Is(err, capture.ErrNoPacket) {
				done <- err
				return
			}
		}
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != io.EOF {
			t.Fatalf("Next after Close: %v, want io.EOF", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("Next took %v to see Close", d)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Next still waiting 3s after Close")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	var p capture.Packet
	if err := s.Next(&p); err != io.EOF {
		t.Errorf("Next after the end: %v", err)
	}
	if _, err := s.KernelStats(); err != nil {
		t.Errorf("KernelStats after Close: %v", err)
	}
}

// TestAFPacketCloseWhileReading closes the socket from another goroutine
// while packets flow and the reader is mid-block: the reader neither
// crashes nor sees a torn packet, and ends with io.EOF.
func TestAFPacketCloseWhileReading(t *testing.T) {
	path := gentest.Trace(t, 300, gen.LinkEthernet)
	n := netnstest.New(t)
	s := openIn(t, n, afpacket.Config{Iface: n.B, BlockSize: 1 << 16, BlockCount: 64}, 1)[0]
	if _, err := n.Send(n.A, path, netnstest.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	var p capture.Packet
	if err := s.Next(&p); err != nil {
		t.Fatal(err)
	}
	payload := p.Payload
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The last packet's payload is still mapped (zero pages now): reading
	// it must not fault.
	sum := 0
	for _, b := range payload {
		sum += int(b)
	}
	if err := s.Next(&p); err != io.EOF {
		t.Fatalf("Next after Close: %v, want io.EOF", err)
	}
}

// TestAFPacketVLAN sends 802.1Q and QinQ tagged frames: the kernel takes
// the outer tag out, Next puts it back, so the packets decode as the
// file's do (VLAN count, lengths, keys).
func TestAFPacketVLAN(t *testing.T) {
	path := writeVLANTrace(t)
	want := capturetest.FileTally(t, path)
	n := netnstest.New(t)
	s := openIn(t, n, afpacket.Config{Iface: n.B, BlockSize: 1 << 16, BlockCount: 8}, 1)[0]
	var vlans []uint8
	var lens [][2]uint32
	var payloads [][]byte
	sent := make(chan struct{})
	var st netnstest.SendStats
	go func() {
		defer close(sent)
		var err error
		if st, err = n.Send(n.A, path, netnstest.SendOptions{}); err != nil {
			t.Error(err)
		}
	}()
	var p capture.Packet
	for len(vlans) < int(want.Stats.Decoded) {
		err := s.Next(&p)
		if errors.Is(err, capture.ErrNoPacket) {
			select {
			case <-sent:
				if s.Stats().Packets >= st.Packets {
					t.Fatalf("read %d packets, %d decoded; want %d", s.Stats().Packets, len(vlans), want.Stats.Decoded)
				}
			default:
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		vlans = append(vlans, p.VLANs)
		lens = append(lens, [2]uint32{p.WireLen, p.CapLen})
		payloads = append(payloads, slices.Clone(p.Payload))
	}
	<-sent
	got := capturetest.NewTally()
	got.Stats = *s.Stats()
	r, err := capture.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := range vlans {
		if err := r.Next(&p); err != nil {
			t.Fatal(err)
		}
		if p.VLANs != vlans[i] || p.WireLen != lens[i][0] || p.CapLen != lens[i][1] || string(p.Payload) != string(payloads[i]) {
			t.Errorf("packet %d: captured %d tags, length %v, %d bytes of payload; the file: %d tags, length %d/%d, %d bytes",
				i, vlans[i], lens[i], len(payloads[i]), p.VLANs, p.WireLen, p.CapLen, len(p.Payload))
		}
	}
	if slices.Max(vlans) < 2 {
		t.Errorf("no QinQ frame captured: tags %v", vlans)
	}
	if got.Stats.Bytes != want.Stats.Bytes || got.Stats.Decoded != want.Stats.Decoded {
		t.Errorf("captured %d bytes, %d decoded; the file %d, %d", got.Stats.Bytes, got.Stats.Decoded, want.Stats.Bytes, want.Stats.Decoded)
	}
}

// TestAFPacketRawIP captures on a tun device (ARPHRD_NONE): the frames
// are IP packets with no link header, and decode as the raw-IP trace
// written into the tun does.
func TestAFPacketRawIP(t *testing.T) {
	path := gentest.Trace(t, 200, gen.LinkRaw)
	want := capturetest.FileTally(t, path)
	n := netnstest.New(t)
	tun := openTun(t, n)
	s := openIn(t, n, afpacket.Config{Iface: tun.name, BlockSize: 1 << 20, BlockCount: 16}, 1)[0]
	if s.LinkType() != capture.LinkRaw {
		t.Fatalf("tun link type %d, want raw IP", s.LinkType())
	}
	tallies := capturetest.Play(t, []*afpacket.Socket{s}, func() error { return tun.play(path) })
	capturetest.Compare(t, tallies[0], want)
}

func TestOpenAFPacketErrors(t *testing.T) {
	n := netnstest.New(t)
	for _, tc := range []struct {
		c       afpacket.Config
		workers int
		want    string
	}{
		{afpacket.Config{Iface: "fm-none"}, 1, `no interface "fm-none" in this network namespace`},
		{afpacket.Config{Iface: n.B, BlockSize: 1000}, 1, "1000 must be a power of two"},
		{afpacket.Config{Iface: n.B}, 0, "workers 0 must be from 1 to 256"},
	} {
		err := n.Do(func() error {
			s, err := afpacket.Open(tc.c, tc.workers)
			if err == nil {
				for _, x := range s {
					x.Close()
				}
			}
			return err
		})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("OpenAFPacket(%+v, %d): %v, want %q", tc.c, tc.workers, err, tc.want)
		}
	}
	// Two groups on one interface in one process: the kernel picks each
	// a free id.
	a := openIn(t, n, afpacket.Config{Iface: n.B, BlockSize: 1 << 16, BlockCount: 2}, 2)
	b := openIn(t, n, afpacket.Config{Iface: n.B, BlockSize: 1 << 16, BlockCount: 2}, 2)
	if len(a) != 2 || len(b) != 2 {
		t.Fatal("groups not opened")
	}
}
