package pipeline

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/gen"
)

// countingPart is a live source whose kernel keeps counts: every field
// of capture.KernelStats, as AF_PACKET and libpcap fill them between
// them.
type countingPart struct {
	*part
	ks capture.KernelStats
}

func (p *countingPart) KernelStats() (capture.KernelStats, error) { return p.ks, nil }

// TestKernelCountsReachSummaryAndMetrics: every count the sources'
// kernels keep (packets, ring drops, ring freezes, interface drops) is
// summed over the sources into the live summary and into a
// flowmon_capture_kernel_*_total metric.
func TestKernelCountsReachSummaryAndMetrics(t *testing.T) {
	trace := genTrace(t, gen.Options{Flows: 200, Seed: 5, Duration: 2 * time.Second})
	srcs := []capture.Source{
		&countingPart{openPart(t, trace, 0, -1, 0, 2), capture.KernelStats{Packets: 1000, Drops: 10, FreezeQueue: 3, IfDrops: 0}},
		&countingPart{openPart(t, trace, 0, -1, 1, 2), capture.KernelStats{Packets: 2000, Drops: 20, FreezeQueue: 0, IfDrops: 7}},
	}
	pl, err := NewLivePipeline(liveConfig(acsm.BackendExact, nil), srcs)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := pl.Register(reg); err != nil {
		t.Fatal(err)
	}
	s, err := RunLive(context.Background(), pl, LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"kernel_packets": 3000, "kernel_drops": 30, "kernel_ring_freezes": 3, "kernel_interface_drops": 7}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	json.Unmarshal(b, &keys)
	for k, v := range want {
		if got, ok := keys[k].(float64); !ok || uint64(got) != v {
			t.Errorf("summary %s = %v, want %d", k, keys[k], v)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if m := mf.GetMetric(); len(m) == 1 && m[0].GetCounter() != nil {
			got[mf.GetName()] = m[0].GetCounter().GetValue()
		}
	}
	for name, v := range map[string]uint64{
		"flowmon_capture_kernel_packets_total":         3000,
		"flowmon_capture_kernel_drops_total":           30,
		"flowmon_capture_kernel_ring_freezes_total":    3,
		"flowmon_capture_kernel_interface_drops_total": 7,
	} {
		if g, ok := got[name]; !ok || uint64(g) != v {
			t.Errorf("%s = %v (exported: %t), want %d", name, g, ok, v)
		}
	}
}
