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
	srcs := []capture.LiveSource{
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

// ebpfPart is a live source fed by the eBPF program: its own counts
// beside KernelStats, a sampling rate and where it is attached.
type ebpfPart struct {
	*part
	c      capture.EBPFCounters
	sample uint32
}

func (p *ebpfPart) KernelStats() (capture.KernelStats, error) {
	return capture.KernelStats{Packets: p.c.Seen - p.c.SampledOut - p.c.FilteredOut, Drops: p.c.Lost}, nil
}
func (p *ebpfPart) EBPFStats() (capture.EBPFStats, bool) {
	return capture.EBPFStats{Counters: p.c, SampleOneIn: p.sample, Attached: "clsact"}, true
}

// TestEBPFCountsReachSummaryAndMetrics: every counter of the eBPF
// program (packets seen, records emitted and lost, packets sampled out
// and filtered out, parse failures by reason) is summed over the rings
// into the live summary's ebpf part and into a flowmon_capture_ebpf_*
// metric, and the summary says the sampling rate and where the program
// is attached.
func TestEBPFCountsReachSummaryAndMetrics(t *testing.T) {
	trace := genTrace(t, gen.Options{Flows: 200, Seed: 5, Duration: 2 * time.Second})
	c0 := capture.EBPFCounters{Seen: 1000, Emitted: 700, Lost: 10, SampledOut: 250, FilteredOut: 40}
	c0.Failures[capture.ReasonIPTruncated] = 3
	c1 := capture.EBPFCounters{Seen: 2000, Emitted: 1500, Lost: 20, SampledOut: 400, FilteredOut: 80}
	c1.Failures[capture.ReasonIPTruncated] = 4
	c1.Failures[capture.ReasonNotIP] = 5
	srcs := []capture.LiveSource{
		&ebpfPart{openPart(t, trace, 0, -1, 0, 2), c0, 4},
		&ebpfPart{openPart(t, trace, 0, -1, 1, 2), c1, 4},
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
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var keys struct {
		EBPF map[string]any `json:"ebpf"`
	}
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"attached": "clsact", "sample_one_in": 4.0, "seen_packets": 3000.0,
		"emitted_records": 2200.0, "lost_records": 30.0, "sampled_out_packets": 650.0, "filtered_out_packets": 120.0} {
		if keys.EBPF[k] != v {
			t.Errorf("summary ebpf.%s = %v, want %v", k, keys.EBPF[k], v)
		}
	}
	pf, _ := keys.EBPF["parse_failures"].(map[string]any)
	if pf["ip_truncated"] != 7.0 || pf["not_ip"] != 5.0 || pf["tcp_data_offset"] != 0.0 || len(pf) != len(capture.Reasons()) {
		t.Errorf("summary ebpf.parse_failures = %v, want ip_truncated 7, not_ip 5, every reason a key", pf)
	}
	if *s.KernelPackets != 3000-650-120 || *s.KernelDrops != 30 {
		t.Errorf("kernel_packets %d kernel_drops %d, want %d and 30", *s.KernelPackets, *s.KernelDrops, 3000-650-120)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			if c := m.GetCounter(); c != nil {
				got[name] = c.GetValue()
			} else if g := m.GetGauge(); g != nil {
				got[name] = g.GetValue()
			}
		}
	}
	for name, v := range map[string]float64{
		"flowmon_capture_ebpf_seen_packets_total":                        3000,
		"flowmon_capture_ebpf_emitted_records_total":                     2200,
		"flowmon_capture_ebpf_lost_records_total":                        30,
		"flowmon_capture_ebpf_sampled_out_packets_total":                 650,
		"flowmon_capture_ebpf_filtered_out_packets_total":                120,
		"flowmon_capture_ebpf_parse_failures_total{reason=ip_truncated}": 7,
		"flowmon_capture_ebpf_parse_failures_total{reason=not_ip}":       5,
		"flowmon_capture_ebpf_parse_failures_total{reason=ip_version}":   0,
		"flowmon_capture_ebpf_sample_one_in":                             4,
		"flowmon_capture_kernel_drops_total":                             30,
	} {
		if g, ok := got[name]; !ok || g != v {
			t.Errorf("%s = %v (exported: %t), want %v", name, g, ok, v)
		}
	}
}
