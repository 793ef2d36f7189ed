//go:build linux

package capture_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/internal/netnstest"
)

// These tests run the AF_PACKET source on a real kernel: a generated
// trace is played into one end of a veth pair in a namespace of its own
// (netnstest) and captured on the other, and what was captured is
// compared with reading the same file.

// genTrace writes a generated trace of normal client/server flows (TCP,
// UDP and ICMP, IPv4 and IPv6, full-size packets: no snaplen) to a
// temporary file and returns its path.
func genTrace(t testing.TB, flows int, link gen.LinkType) string {
	t.Helper()
	opt := gen.DefaultOptions()
	opt.Flows, opt.Duration, opt.Link = flows, 5*time.Second, link
	opt.Mix = gen.Mix{Normal: 1}
	p := filepath.Join(t.TempDir(), fmt.Sprintf("trace-%d.pcap", flows))
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.Generate(f, nil, opt); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// tally is what a source read: its Stats, and per flow key the packets
// each way.
type tally struct {
	stats capture.Stats
	flows map[capture.Key]*[2]int // [forward, reversed]
}

func newTally() *tally { return &tally{flows: map[capture.Key]*[2]int{}} }

func (ta *tally) add(p *capture.Packet) {
	c := ta.flows[p.Key]
	if c == nil {
		c = new([2]int)
		ta.flows[p.Key] = c
	}
	if p.Reversed {
		c[1]++
	} else {
		c[0]++
	}
}

func (ta *tally) merge(o *tally) {
	ta.stats.Add(&o.stats)
	for k, c := range o.flows {
		d := ta.flows[k]
		if d == nil {
			d = new([2]int)
			ta.flows[k] = d
		}
		d[0] += c[0]
		d[1] += c[1]
	}
}

// fileTally reads the capture file at path.
func fileTally(t testing.TB, path string) *tally {
	t.Helper()
	r, err := capture.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ta := newTally()
	var p capture.Packet
	for {
		err := r.Next(&p)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ta.add(&p)
	}
	ta.stats = *r.Stats()
	return ta
}

// compare fails t where got differs from want: the counts by class, and
// every flow's packets each way.
func compare(t testing.TB, got, want *tally) {
	t.Helper()
	g, w := &got.stats, &want.stats
	if g.Packets != w.Packets || g.Bytes != w.Bytes || g.Decoded != w.Decoded || g.Link != w.Link ||
		g.Network != w.Network || g.Transport != w.Transport || g.Skipped != w.Skipped {
		t.Errorf("captured counts differ from the file's:\ncaptured %d packets, %d bytes, %d decoded, %v %v %v skipped %v\nfile     %d packets, %d bytes, %d decoded, %v %v %v skipped %v",
			g.Packets, g.Bytes, g.Decoded, g.LinkCounts(), g.NetworkCounts(), g.TransportCounts(), g.Skipped,
			w.Packets, w.Bytes, w.Decoded, w.LinkCounts(), w.NetworkCounts(), w.TransportCounts(), w.Skipped)
	}
	if len(got.flows) != len(want.flows) {
		t.Errorf("captured %d flows, the file has %d", len(got.flows), len(want.flows))
	}
	bad := 0
	for k, wc := range want.flows {
		if gc := got.flows[k]; gc == nil || *gc != *wc {
			if bad++; bad <= 5 {
				t.Errorf("flow %v: captured %v packets (forward, reversed), the file has %v", k, gc, *wc)
			}
		}
	}
	if bad > 5 {
		t.Errorf("... %d flows differ in all", bad)
	}
}

// openIn opens an AF_PACKET capture in n's namespace and closes it when
// t ends.
func openIn(t testing.TB, n *netnstest.Net, c capture.AFPacketConfig, workers int) []*capture.AFPacket {
	t.Helper()
	var socks []*capture.AFPacket
	if err := n.Do(func() error {
		var err error
		socks, err = capture.OpenAFPacket(c, workers)
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

// readAll reads s into a tally until sent is closed and every packet the
// kernel passed to the socket has been read (or, past deadline, fails).
func readAll(t testing.TB, s *capture.AFPacket, sent <-chan struct{}, deadline time.Time) (*tally, error) {
	ta := newTally()
	var p capture.Packet
	for {
		err := s.Next(&p)
		switch {
		case err == nil:
			ta.add(&p)
			continue
		case !errors.Is(err, capture.ErrNoPacket):
			return ta, err
		}
		select {
		case <-sent:
		default:
			continue
		}
		ks, err := s.KernelStats()
		if err != nil {
			return ta, err
		}
		if s.Stats().Packets >= ks.Packets-ks.Drops {
			ta.stats = *s.Stats()
			return ta, nil
		}
		if time.Now().After(deadline) {
			return ta, fmt.Errorf("read %d packets, the kernel passed %d: still missing at the deadline", s.Stats().Packets, ks.Packets-ks.Drops)
		}
	}
}

// capturePlay reads every socket on a goroutine of its own while play
// runs, and returns each socket's tally once all is read.
func capturePlay(t testing.TB, socks []*capture.AFPacket, play func() error) []*tally {
	t.Helper()
	sent := make(chan struct{})
	tallies := make([]*tally, len(socks))
	errs := make([]error, len(socks))
	var wg sync.WaitGroup
	deadline := time.Now().Add(20 * time.Second)
	for i, s := range socks {
		wg.Go(func() { tallies[i], errs[i] = readAll(t, s, sent, deadline) })
	}
	perr := play()
	close(sent)
	wg.Wait()
	if err := errors.Join(append(errs, perr)...); err != nil {
		t.Fatal(err)
	}
	return tallies
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
func ringFor(t testing.TB, iface, path string) capture.AFPacketConfig {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks := int(2*fi.Size()>>20) + 8
	return capture.AFPacketConfig{Iface: iface, BlockSize: 1 << 20, BlockCount: blocks, BlockTimeout: 100 * time.Millisecond}
}

// TestAFPacketVethMatchesFile plays a trace of 3000 flows into a veth
// pair and checks that what 1 and 2 sockets (fanout hash) capture is what
// reading the file gives: the counts by class and every flow's packets
// each way. The ring holds the whole trace, so the kernel drops nothing
// whatever the machine's load, which KernelStats confirms. With 2
// sockets each flow, both directions, is on one socket, and both sockets
// have flows.
func TestAFPacketVethMatchesFile(t *testing.T) {
	path := genTrace(t, 3000, gen.LinkEthernet)
	want := fileTally(t, path)
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			n := netnstest.New(t)
			socks := openIn(t, n, ringFor(t, n.B, path), workers)
			var st netnstest.SendStats
			tallies := capturePlay(t, socks, func() (err error) {
				st, err = n.Send(n.A, path, netnstest.SendOptions{})
				return err
			})
			t.Logf("sent %v", st)
			got := newTally()
			var ks capture.KernelStats
			for i, ta := range tallies {
				got.merge(ta)
				k, err := socks[i].KernelStats()
				if err != nil {
					t.Fatal(err)
				}
				ks.Add(k)
				t.Logf("socket %d: %d packets, %d flows; kernel %+v", i, ta.stats.Packets, len(ta.flows), k)
				if ta.stats.Packets == 0 {
					t.Errorf("socket %d received nothing", i)
				}
			}
			if ks.Drops != 0 || ks.Packets != st.Packets {
				t.Errorf("kernel counts %+v, want %d packets and no drop", ks, st.Packets)
			}
			compare(t, got, want)
			if workers > 1 {
				checkFlowsOnOneSocket(t, tallies)
			}
		})
	}
}

// checkFlowsOnOneSocket checks that no flow key is on two sockets, and
// that the TCP flows seen both ways are many: the fanout hash is
// symmetric.
func checkFlowsOnOneSocket(t testing.TB, tallies []*tally) {
	t.Helper()
	on := map[capture.Key]int{}
	both, split := 0, 0
	for i, ta := range tallies {
		for k, c := range ta.flows {
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
	path := genTrace(t, 300, gen.LinkEthernet)
	want := fileTally(t, path)
	for _, mode := range []string{capture.FanoutCPU, capture.FanoutLB} {
		t.Run(mode, func(t *testing.T) {
			n := netnstest.New(t)
			c := ringFor(t, n.B, path)
			c.Fanout = mode
			socks := openIn(t, n, c, 2)
			tallies := capturePlay(t, socks, func() error {
				_, err := n.Send(n.A, path, netnstest.SendOptions{})
				return err
			})
			got := newTally()
			for _, ta := range tallies {
				got.merge(ta)
			}
			compare(t, got, want)
			if mode == capture.FanoutLB && (tallies[0].stats.Packets == 0 || tallies[1].stats.Packets == 0) {
				t.Errorf("lb fanout left a socket empty: %d and %d packets", tallies[0].stats.Packets, tallies[1].stats.Packets)
			}
		})
	}
}

// TestAFPacketDrops overflows a ring of two 4 KiB blocks that nobody
// reads: the kernel must report the drops, and what was kept and what
// was dropped must add up to what was sent.
func TestAFPacketDrops(t *testing.T) {
	path := genTrace(t, 100, gen.LinkEthernet)
	n := netnstest.New(t)
	socks := openIn(t, n, capture.AFPacketConfig{Iface: n.B, BlockSize: 4096, BlockCount: 2, FrameSize: 2048}, 1)
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
	path := genTrace(t, 300, gen.LinkEthernet)
	want := fileTally(t, path)
	prog, err := capture.ParseBPF(capture.BPFTCP)
	if err != nil {
		t.Fatal(err)
	}
	n := netnstest.New(t)
	c := ringFor(t, n.B, path)
	c.Filter = prog
	socks := openIn(t, n, c, 1)
	tallies := capturePlay(t, socks, func() error {
		_, err := n.Send(n.A, path, netnstest.SendOptions{})
		return err
	})
	got := tallies[0]
	tr := got.stats.TransportCounts()
	wantTCP := want.stats.TransportCounts()["tcp"]
	if tr["tcp"] != wantTCP || len(tr) != 1 || got.stats.Packets != wantTCP {
		t.Errorf("captured %v (%d packets), want only the file's %d TCP packets (file: %v)",
			tr, got.stats.Packets, wantTCP, want.stats.TransportCounts())
	}
	if want.stats.TransportCounts()["udp"] == 0 {
		t.Fatal("the trace has no UDP: the test shows nothing")
	}
	for k, c := range want.flows {
		if k.Proto == capture.ProtoTCP && got.flows[k] != nil && *got.flows[k] != *c {
			t.Errorf("flow %v: captured %v, file %v", k, *got.flows[k], *c)
		}
	}
}

// TestAFPacketNoAllocs fills a ring of 64 KiB blocks, then checks that
// Next, crossing blocks and giving them back, allocates nothing.
func TestAFPacketNoAllocs(t *testing.T) {
	path := genTrace(t, 300, gen.LinkEthernet)
	n := netnstest.New(t)
	c := ringFor(t, n.B, path)
	c.BlockSize, c.BlockCount = 64<<10, c.BlockCount*16
	s := openIn(t, n, c, 1)[0]
	st, err := n.Send(n.A, path, netnstest.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * c.BlockTimeout) // the last block retires
	checkNextNoAllocs(t, s, int(st.Packets))
}

// TestAFPacketClose closes a socket from another goroutine while Next
// waits in poll with a long block timeout: Next must return io.EOF at
// once, not after the timeout; then Close again is a no-op, Next stays at
// io.EOF and KernelStats keeps its totals.
func TestAFPacketClose(t *testing.T) {
	n := netnstest.New(t)
	socks := openIn(t, n, capture.AFPacketConfig{Iface: n.B, BlockTimeout: 5 * time.Second, BlockSize: 1 << 16, BlockCount: 4}, 1)
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
	path := genTrace(t, 300, gen.LinkEthernet)
	n := netnstest.New(t)
	s := openIn(t, n, capture.AFPacketConfig{Iface: n.B, BlockSize: 1 << 16, BlockCount: 64}, 1)[0]
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
	want := fileTally(t, path)
	n := netnstest.New(t)
	s := openIn(t, n, capture.AFPacketConfig{Iface: n.B, BlockSize: 1 << 16, BlockCount: 8}, 1)[0]
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
	for len(vlans) < int(want.stats.Decoded) {
		err := s.Next(&p)
		if errors.Is(err, capture.ErrNoPacket) {
			select {
			case <-sent:
				if s.Stats().Packets >= st.Packets {
					t.Fatalf("read %d packets, %d decoded; want %d", s.Stats().Packets, len(vlans), want.stats.Decoded)
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
	got := newTally()
	got.stats = *s.Stats()
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
	if got.stats.Bytes != want.stats.Bytes || got.stats.Decoded != want.stats.Decoded {
		t.Errorf("captured %d bytes, %d decoded; the file %d, %d", got.stats.Bytes, got.stats.Decoded, want.stats.Bytes, want.stats.Decoded)
	}
}

// TestAFPacketRawIP captures on a tun device (ARPHRD_NONE): the frames
// are IP packets with no link header, and decode as the raw-IP trace
// written into the tun does.
func TestAFPacketRawIP(t *testing.T) {
	path := genTrace(t, 200, gen.LinkRaw)
	want := fileTally(t, path)
	n := netnstest.New(t)
	tun := openTun(t, n)
	s := openIn(t, n, capture.AFPacketConfig{Iface: tun.name, BlockSize: 1 << 20, BlockCount: 16}, 1)[0]
	if s.LinkType() != capture.LinkRaw {
		t.Fatalf("tun link type %d, want raw IP", s.LinkType())
	}
	tallies := capturePlay(t, []*capture.AFPacket{s}, func() error { return tun.play(path) })
	compare(t, tallies[0], want)
}

func TestOpenAFPacketErrors(t *testing.T) {
	n := netnstest.New(t)
	for _, tc := range []struct {
		c       capture.AFPacketConfig
		workers int
		want    string
	}{
		{capture.AFPacketConfig{Iface: "fm-none"}, 1, `no interface "fm-none" in this network namespace`},
		{capture.AFPacketConfig{Iface: n.B, BlockSize: 1000}, 1, "1000 must be a power of two"},
		{capture.AFPacketConfig{Iface: n.B}, 0, "workers 0 must be from 1 to 256"},
	} {
		err := n.Do(func() error {
			s, err := capture.OpenAFPacket(tc.c, tc.workers)
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
	a := openIn(t, n, capture.AFPacketConfig{Iface: n.B, BlockSize: 1 << 16, BlockCount: 2}, 2)
	b := openIn(t, n, capture.AFPacketConfig{Iface: n.B, BlockSize: 1 << 16, BlockCount: 2}, 2)
	if len(a) != 2 || len(b) != 2 {
		t.Fatal("groups not opened")
	}
}
