//go:build linux

package bpf

import (
	"net/netip"
	"testing"
	"time"

	"github.com/cilium/ebpf/ringbuf"

	"github.com/flowmon/flowmon/internal/testutil/bpftest"
)

// tcpFrame is an Ethernet frame of an IPv4 TCP segment with 100 payload
// bytes: the program's usual case, the payload copy at its full 64 bytes.
func tcpFrame() []byte {
	f := udpFrame(netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2"), 40000, 443)
	f = f[:14+20]
	f[14+2], f[14+3] = 0, 20+20+100
	f[14+9] = 6
	tcp := []byte{0x9c, 0x40, 0x01, 0xbb, 0, 0, 0, 1, 0, 0, 0, 2, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0}
	f = append(f, tcp...)
	return append(f, make([]byte, 100)...)
}

// BenchmarkProgram is the program's time per packet, parse and emit,
// under BPF_PROG_TEST_RUN (Program.Benchmark: the kernel runs it on one
// frame 20,000 times a round), reported as ns/pkt. The ring (8 MiB) takes
// a round's records and is read empty between rounds, as a reader keeps
// it, so every run writes a record.
func BenchmarkProgram(b *testing.B) {
	bpftest.Require(b)
	frames := []struct {
		name  string
		frame []byte
	}{
		{"ipv4-tcp-100B", tcpFrame()},
		{"ipv4-udp-8B", udpFrame(netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("203.0.113.1"), 5353, 53)},
		{"ipv6-udp-8B", udpFrame(netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2"), 5353, 53)},
	}
	for _, hook := range []string{"xdp", "tc"} {
		for _, f := range frames {
			b.Run(hook+"/"+f.name, func(b *testing.B) {
				const repeat = 20000
				o, err := Load(Options{Rings: 1, RingSize: 8 << 20})
				if err != nil {
					b.Fatalf("%+v", err)
				}
				defer o.Close()
				rd, err := o.NewReader(0)
				if err != nil {
					b.Fatal(err)
				}
				defer rd.Close()
				prog := o.XDPProgram()
				if hook == "tc" {
					prog = o.TCIngressProgram()
				}
				var total time.Duration
				var rec ringbuf.Record
				runs := 0
				for b.Loop() {
					_, d, err := prog.Benchmark(f.frame, repeat, nil)
					if err != nil {
						b.Fatal(err)
					}
					total += d
					runs++
					rd.SetDeadline(time.Now())
					for rd.ReadInto(&rec) == nil {
					}
				}
				if c, _ := o.Counters(0); c.Lost != 0 {
					b.Fatalf("%d records lost: the round did not fit the ring", c.Lost)
				}
				b.ReportMetric(float64(total.Nanoseconds())/float64(runs), "ns/pkt")
			})
		}
	}
}
