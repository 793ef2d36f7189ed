package acsm

import (
	"testing"

	"github.com/flowmon/flowmon/capture"
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
	tr, err := New(Config{Backend: kind, Capacity: benchFlows, FPRate: 0.001})
	if err != nil {
		b.Fatal(err)
	}
	p := mkPacket(capture.ProtoTCP, cli, srv, step{true, syn, 0}, t0)
	for i := 0; i < benchFlows; i++ {
		p.Hash, p.Flags, p.Reversed = benchHash(i), syn, false
		tr.Observe(&p)
		p.Flags, p.Reversed = synack, true
		tr.Observe(&p)
	}
	benchTrackers[kind] = tr
	return tr
}

// BenchmarkObserve is the per-packet cost of one state update (lookup,
// transition, write back) at 1M concurrent flows.
func BenchmarkObserve(b *testing.B) {
	for _, kind := range []BackendKind{BackendKBF, BackendSBF, BackendFCF, BackendExact} {
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
