//go:build linux

package afpacket_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/capture/afpacket"
	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/gen/gentest"
	"github.com/flowmon/flowmon/internal/testutil/netnstest"
)

// BenchmarkAFPacketVeth plays a 3000-flow trace (42,026 packets, 541 bytes
// on average) three times into a veth pair as fast as one sender goes, and captures
// it with the default ring (64 blocks of 1 MiB a socket) on 1 and 2
// sockets (fanout hash), each read on its own goroutine that decodes
// every packet and does nothing else. It reports what the sender achieved
// (sent-pps), what the capture read (captured-pps: packets read over the
// time from the first send until every reader has found its ring empty,
// which counts up to a block timeout and a poll timeout of idling) and the
// kernel's drops. The
// sender's write runs the kernel's whole receive path, the copy into the
// ring included, so the sender is the bound on a small machine: the
// figures are a floor for the source, not its ceiling.
func BenchmarkAFPacketVeth(b *testing.B) {
	frames, err := netnstest.LoadFrames(gentest.Trace(b, 3000, gen.LinkEthernet))
	if err != nil {
		b.Fatal(err)
	}
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			n := netnstest.New(b)
			socks := openIn(b, n, afpacket.Config{Iface: n.B}, workers)
			var sent, read uint64
			var sendTime, readTime time.Duration
			for b.Loop() {
				before := make([]uint64, len(socks))
				for i, s := range socks {
					before[i] = s.Stats().Packets
				}
				start := time.Now()
				var wg sync.WaitGroup
				done := make(chan struct{})
				for _, s := range socks {
					wg.Go(func() {
						var p capture.Packet
						for {
							err := s.Next(&p)
							if err == nil {
								continue
							}
							if !errors.Is(err, capture.ErrNoPacket) {
								b.Error(err)
								return
							}
							select {
							case <-done:
								return
							default:
							}
						}
					})
				}
				st, err := n.SendFrames(n.A, frames, netnstest.SendOptions{Loops: 3})
				if err != nil {
					b.Fatal(err)
				}
				// The readers end at their first idle poll after
				// this, once every block has retired.
				close(done)
				wg.Wait()
				readTime += time.Since(start)
				sent += st.Packets
				sendTime += st.Elapsed
				for i, s := range socks {
					read += s.Stats().Packets - before[i]
				}
			}
			var drops uint64
			for _, s := range socks {
				ks, err := s.KernelStats()
				if err != nil {
					b.Fatal(err)
				}
				drops += ks.Drops
			}
			b.ReportMetric(float64(sent)/sendTime.Seconds(), "sent-pps")
			b.ReportMetric(float64(read)/readTime.Seconds(), "captured-pps")
			b.ReportMetric(float64(drops), "drops")
			b.ReportMetric(100*float64(drops)/float64(sent), "drop-%")
		})
	}
}

// BenchmarkAFPacketNext is the cost of Next alone: reading and decoding
// one packet from a ring the kernel has already filled (refilled, off the
// clock, when it runs dry).
func BenchmarkAFPacketNext(b *testing.B) {
	path := gentest.Trace(b, 1000, gen.LinkEthernet)
	n := netnstest.New(b)
	c := ringFor(b, n.B, path)
	s := openIn(b, n, c, 1)[0]
	var left uint64 // packets in the ring not yet read
	fill := func() {
		st, err := n.Send(n.A, path, netnstest.SendOptions{})
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(2 * c.BlockTimeout) // the last block retires
		left = st.Packets
	}
	fill()
	var p capture.Packet
	b.ReportAllocs()
	for b.Loop() {
		if left == 0 {
			// Refill off the clock: reading the ring dry would time a
			// poll's wait.
			b.StopTimer()
			fill()
			b.StartTimer()
		}
		if err := s.Next(&p); err != nil {
			ks, _ := s.KernelStats()
			b.Fatalf("%v with %d packets left to read: read %+v, kernel %+v", err, left, s.Stats(), ks)
		}
		left--
	}
}
