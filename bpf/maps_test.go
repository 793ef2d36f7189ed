//go:build linux

package bpf

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/flowmon/flowmon/internal/testutil/bpftest"
)

// udpFrame is an Ethernet frame of a UDP datagram with 8 payload bytes.
func udpFrame(src, dst netip.Addr, sport, dport uint16) []byte {
	var f []byte
	f = append(f, make([]byte, 12)...)
	udp := binary.BigEndian.AppendUint16(nil, sport)
	udp = binary.BigEndian.AppendUint16(udp, dport)
	udp = binary.BigEndian.AppendUint16(udp, 16)
	udp = append(udp, 0, 0, 'p', 'a', 'y', 'l', 'o', 'a', 'd', '!')
	if src.Is4() {
		f = binary.BigEndian.AppendUint16(f, 0x0800)
		ip := []byte{0x45, 0, 0, byte(20 + len(udp)), 0, 1, 0, 0, 64, 17, 0, 0}
		s, d := src.As4(), dst.As4()
		ip = append(append(ip, s[:]...), d[:]...)
		return append(append(f, ip...), udp...)
	}
	f = binary.BigEndian.AppendUint16(f, 0x86dd)
	ip := []byte{0x60, 0, 0, 0, 0, byte(len(udp)), 17, 64}
	s, d := src.As16(), dst.As16()
	ip = append(append(ip, s[:]...), d[:]...)
	return append(append(f, ip...), udp...)
}

func load(t *testing.T, opt Options) *Objects {
	t.Helper()
	bpftest.Require(t)
	o, err := Load(opt)
	if err != nil {
		t.Fatalf("%+v", err)
	}
	t.Cleanup(func() { o.Close() })
	return o
}

func runFrame(t *testing.T, o *Objects, frame []byte) {
	t.Helper()
	if ret, err := o.XDPProgram().Run(&ebpf.RunOptions{Data: frame}); err != nil || ret != 2 {
		t.Fatalf("run: %d, %v (want XDP_PASS)", ret, err)
	}
}

// drain reads every record in ring i and returns their count.
func drain(t *testing.T, o *Objects, i int) int {
	t.Helper()
	rd, err := o.NewReader(i)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	rd.SetDeadline(time.Now())
	var rec ringbuf.Record
	n := 0
	for {
		if err := rd.ReadInto(&rec); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return n
			}
			t.Fatal(err)
		}
		n++
	}
}

// TestFullRingCountsLost: with a one-page ring and no reader, the records
// past what the ring holds are counted as lost, never silently dropped:
// every packet is either emitted or lost, and the ring holds the emitted.
func TestFullRingCountsLost(t *testing.T) {
	o := load(t, Options{Rings: 1, RingSize: os.Getpagesize()})
	const sent = 200
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	for i := range sent {
		runFrame(t, o, udpFrame(a, b, uint16(1000+i), 53))
	}
	c, err := o.Counters(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seen %d emitted %d lost %d", c.Seen, c.Emitted, c.Lost)
	if c.Seen != sent || c.Emitted+c.Lost != sent || c.Lost == 0 {
		t.Errorf("seen %d, emitted %d, lost %d: want %d seen, some lost, every one counted", c.Seen, c.Emitted, c.Lost, sent)
	}
	if n := drain(t, o, 0); uint64(n) != c.Emitted {
		t.Errorf("the ring holds %d records, %d emitted", n, c.Emitted)
	}
}

// TestSampling: with 1 flow in 8 kept, a flow's two directions are kept
// or left out together, and the share kept is within 4 standard
// deviations of 1/8; setting 1 again keeps every flow.
func TestSampling(t *testing.T) {
	o := load(t, Options{Rings: 1, RingSize: 1 << 20})
	if err := o.SetSampling(8); err != nil {
		t.Fatal(err)
	}
	const flows = 4000
	a, b := netip.MustParseAddr("198.51.100.7"), netip.MustParseAddr("2001:db8::1")
	kept := 0
	for i := range flows {
		src, dst := a, netip.MustParseAddr("203.0.113.9")
		if i%2 == 1 {
			src, dst = b, netip.MustParseAddr("2001:db8::2")
		}
		before, _ := o.Counters(0)
		runFrame(t, o, udpFrame(src, dst, uint16(1024+i), 443))
		runFrame(t, o, udpFrame(dst, src, 443, uint16(1024+i)))
		after, _ := o.Counters(0)
		switch after.Emitted - before.Emitted {
		case 2:
			kept++
		case 0:
		default:
			t.Fatalf("flow %d: one direction kept, the other left out", i)
		}
	}
	c, _ := o.Counters(0)
	if c.Seen != 2*flows || c.Emitted+c.SampledOut != c.Seen {
		t.Errorf("seen %d, emitted %d, sampled out %d", c.Seen, c.Emitted, c.SampledOut)
	}
	mean, sd := float64(flows)/8, 20.9 // sqrt(4000 × 1/8 × 7/8)
	t.Logf("kept %d of %d flows (expected %.0f ± %.1f)", kept, flows, mean, sd)
	if d := float64(kept) - mean; d > 4*sd || d < -4*sd {
		t.Errorf("kept %d flows of %d sampling 1 in 8", kept, flows)
	}
	if err := o.SetSampling(1); err != nil {
		t.Fatal(err)
	}
	before, _ := o.Counters(0)
	for i := range 64 {
		runFrame(t, o, udpFrame(a, netip.MustParseAddr("203.0.113.9"), uint16(i), 1))
	}
	if after, _ := o.Counters(0); after.Emitted-before.Emitted != 64 {
		t.Errorf("sampling 1: %d of 64 emitted", after.Emitted-before.Emitted)
	}
}

// TestPreFilter: prefixes (IPv4 and IPv6), ports, both, and none, each
// set while the program is loaded.
func TestPreFilter(t *testing.T) {
	o := load(t, Options{Rings: 1, RingSize: 1 << 20})
	in4, out4 := netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("10.2.0.1")
	in6, out6 := netip.MustParseAddr("2001:db8:1::5"), netip.MustParseAddr("2001:db9::5")
	other := netip.MustParseAddr("192.0.2.99")
	other6 := netip.MustParseAddr("2001:db8:ffff::1")
	pfx := []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("2001:db8:1::/48")}
	cases := []struct {
		name     string
		prefixes []netip.Prefix
		ports    []uint16
		frame    []byte
		keep     bool
	}{
		{"v4 src in prefix", pfx, nil, udpFrame(in4, other, 1000, 2000), true},
		{"v4 dst in prefix", pfx, nil, udpFrame(other, in4, 1000, 2000), true},
		{"v4 outside", pfx, nil, udpFrame(out4, other, 1000, 2000), false},
		{"v6 in prefix", pfx, nil, udpFrame(other6, in6, 1000, 2000), true},
		{"v6 outside", pfx, nil, udpFrame(out6, other6, 1000, 2000), false},
		{"port listed", nil, []uint16{53, 65535}, udpFrame(out4, other, 53, 40000), true},
		{"port 65535 listed", nil, []uint16{53, 65535}, udpFrame(out4, other, 40000, 65535), true},
		{"port not listed", nil, []uint16{53, 65535}, udpFrame(out4, other, 54, 40000), false},
		{"prefix and port", pfx, []uint16{53}, udpFrame(in4, other, 53, 40000), true},
		{"prefix, not port", pfx, []uint16{53}, udpFrame(in4, other, 54, 40000), false},
		{"port, not prefix", pfx, []uint16{53}, udpFrame(out4, other, 53, 40000), false},
		{"no filter", nil, nil, udpFrame(out4, other, 54, 40000), true},
	}
	for _, c := range cases {
		if err := o.SetFilter(c.prefixes, c.ports); err != nil {
			t.Fatal(err)
		}
		before, _ := o.Counters(0)
		runFrame(t, o, c.frame)
		after, _ := o.Counters(0)
		kept := after.Emitted-before.Emitted == 1
		filtered := after.FilteredOut-before.FilteredOut == 1
		if kept != c.keep || kept == filtered {
			t.Errorf("%s: emitted %d, filtered out %d; want kept %v", c.name,
				after.Emitted-before.Emitted, after.FilteredOut-before.FilteredOut, c.keep)
		}
	}
}
