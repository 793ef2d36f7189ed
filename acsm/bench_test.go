package acsm

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/testutil/cputime"
	"github.com/flowmon/flowmon/internal/testutil/testgate"
	"github.com/flowmon/flowmon/kbf"
)

// benchTrackers holds one filled tracker per backend, built once.
var benchTrackers = map[BackendKind]*Tracker{}

const benchFlows = 1 << 20

func benchHash(i int) uint64 { return uint64(i+1) * 0x9e3779b97f4a7c15 }

// filledTracker returns a tracker of kind holding benchFlows established
// flows (1M concurrent flows, aging and a 1/1024 shadow on, as deployed).
func filledTracker(b *testing.B, kind BackendKind) *Tracker {
	if tr := benchTrackers[kind]; tr != nil {
		return tr
	}
	tr := establish(b, Config{Backend: kind, Capacity: benchFlows, FPRate: 0.001}, benchFlows)
	benchTrackers[kind] = tr
	return tr
}

// establish returns a tracker built from cfg holding flows established
// flows, benchHash(0) to benchHash(flows-1).
func establish(b *testing.B, cfg Config, flows int) *Tracker {
	tr, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	p := mkPacket(capture.ProtoTCP, cli, srv, step{true, syn, 0}, t0)
	for i := 0; i < flows; i++ {
		p.Hash, p.Flags, p.Reversed = benchHash(i), syn, false
		tr.Observe(&p)
		p.Flags, p.Reversed = synack, true
		tr.Observe(&p)
	}
	return tr
}

// BenchmarkObserve is the per-packet cost of one state update (lookup,
// transition, write back) at 1M concurrent flows.
func BenchmarkObserve(b *testing.B) {
	for _, kind := range []BackendKind{BackendKBF, BackendSBF, BackendFCF, BackendExact, BackendDLeft} {
		b.Run(kind.String(), func(b *testing.B) {
			tr := filledTracker(b, kind)
			p := mkPacket(capture.ProtoTCP, cli, srv, step{true, psh, 100}, t0)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				p.Hash = benchHash(i & (benchFlows - 1))
				p.Reversed = i&benchFlows != 0
				tr.Observe(&p)
			}
			b.ReportMetric(float64(tr.Stats().MemoryBytes)/benchFlows, "bytes/flow")
		})
	}
}

// BenchmarkObservePrefetch is BenchmarkObserve as a worker runs it: packets
// of random flows in batches of 256, each layout of the kbf backend
// observed one packet at a time ("single") and with Tracker.Prefetch four
// packets ahead ("prefetch"), at 4M concurrent flows.
func BenchmarkObservePrefetch(b *testing.B) {
	const flows, batch, ahead = 1 << 22, 256, 4
	for _, layout := range []kbf.LayoutKind{kbf.Standard, kbf.Blocked} {
		tr := establish(b, Config{Backend: BackendKBF, Capacity: flows, FPRate: 0.001, KBFEncoder: kbf.Sidon, KBFLayout: layout}, flows)
		p := mkPacket(capture.ProtoTCP, cli, srv, step{true, psh, 100}, t0)
		pkts := make([]capture.Packet, batch)
		for _, pre := range []bool{false, true} {
			name := layout.String() + "/single"
			if pre {
				name = layout.String() + "/prefetch"
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				j := 0
				for b.Loop() {
					for i := range pkts {
						pkts[i] = p
						pkts[i].Hash = benchHash(int(uint64(j) * 2654435761 % flows))
						pkts[i].Reversed = j&1 != 0
						j++
					}
					if pre {
						for i := range ahead {
							tr.Prefetch(pkts[i].Hash)
						}
					}
					for i := range pkts {
						if pre && i+ahead < len(pkts) {
							tr.Prefetch(pkts[i+ahead].Hash)
						}
						tr.Observe(&pkts[i])
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/packet")
			})
		}
	}
}

// BenchmarkObserveBatch is the worker's loop for the one-probe dleft
// backend beside exact and kbf (Sidon codes, blocked layout: the replay's
// kbf): batches of 256 packets of random flows, observed one at a time
// ("single") and with Tracker.Prefetch four packets ahead ("prefetch"),
// at 4k flows (in cache), 1M and 10M (FLOWMON_LONG=1; no kbf, 1.8 GB).
// cpu-ns/packet is the thread's CPU time (a shared machine's other load
// inflates ns/packet, not it).
func BenchmarkObserveBatch(b *testing.B) {
	const batch, ahead = 256, 4
	for _, flows := range []int{1 << 12, 1 << 20, testgate.LargeSize} {
		for _, kind := range []BackendKind{BackendDLeft, BackendExact, BackendKBF} {
			if kind == BackendKBF && flows >= testgate.LargeSize {
				continue
			}
			var tr *Tracker
			for _, pre := range []bool{false, true} {
				name := fmt.Sprintf("flows=%d/%s/single", flows, kind)
				if pre {
					name = fmt.Sprintf("flows=%d/%s/prefetch", flows, kind)
				}
				b.Run(name, func(b *testing.B) {
					testgate.LongSize(b, uint64(flows))
					if tr == nil {
						tr = establish(b, Config{Backend: kind, Capacity: flows, FPRate: 0.001, KBFEncoder: kbf.Sidon, KBFLayout: kbf.Blocked}, flows)
					}
					p := mkPacket(capture.ProtoTCP, cli, srv, step{true, psh, 100}, t0)
					pkts := make([]capture.Packet, batch)
					for i := range pkts {
						pkts[i] = p
					}
					b.ReportAllocs()
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					// The j-th packet is of flow j*stride mod flows, kept as a
					// running sum: a 64-bit division a packet would cost the
					// harness more than a tenth of what it measures. Observe
					// reads the packet and changes nothing in it, so only the
					// flow's hash and direction are written.
					stride := uint64(2654435761) % uint64(flows)
					j, k := 0, uint64(0)
					var ev Event
					cpu := cputime.Thread()
					for b.Loop() {
						for i := range pkts {
							pkts[i].Hash = benchHash(int(k))
							pkts[i].Reversed = j&1 != 0
							j++
							if k += stride; k >= uint64(flows) {
								k -= uint64(flows)
							}
						}
						if pre {
							for i := range ahead {
								tr.Prefetch(pkts[i].Hash)
							}
						}
						for i := range pkts {
							if pre && i+ahead < len(pkts) {
								tr.Prefetch(pkts[i+ahead].Hash)
							}
							tr.ObserveInto(&pkts[i], &ev) // as the engine's shard
						}
					}
					cpu = cputime.Thread() - cpu
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/packet")
					b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*batch), "cpu-ns/packet")
					b.ReportMetric(float64(tr.Stats().MemoryBytes)/float64(flows), "bytes/flow")
				})
			}
		}
	}
}
