package pipeline

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/pipeline/dedup"
	"github.com/flowmon/flowmon/pipeline/flowcount"
)

// published is the pipeline's counters as of its last publish: the packet
// goroutine copies them here every publishEvery packets and at the end, so
// a scrape never touches the packet path's own variables.
type published struct {
	mu      sync.Mutex
	capture capture.Stats
}

const publishEvery = 8192

// collector exports the pipeline's metrics at scrape time. Names follow
// flowmon_<subsystem>_<name>_<unit>; label values come from fixed sets.
type collector struct {
	pub    *published
	shards []*shard
	// target is the ACSM's target error rate (its p), 0 for the exact
	// backend, which has none.
	target float64
}

var (
	descPackets   = prometheus.NewDesc("flowmon_capture_packets_total", "Records read, by link type.", []string{"link"}, nil)
	descBytes     = prometheus.NewDesc("flowmon_capture_bytes_total", "Wire bytes of the records read.", nil, nil)
	descNetwork   = prometheus.NewDesc("flowmon_capture_network_packets_total", "Records by network layer.", []string{"network"}, nil)
	descTransport = prometheus.NewDesc("flowmon_capture_transport_packets_total", "Decoded packets by transport.", []string{"transport"}, nil)
	descSkipped   = prometheus.NewDesc("flowmon_capture_skipped_packets_total", "Records that yielded no flow packet, by reason (malformed input, or not IP).", []string{"reason"}, nil)
	// Fragment reassembly (capture/defrag): what it took, made whole,
	// dropped (its overload among the reasons), holds and let pass.
	descDefragFrags     = prometheus.NewDesc("flowmon_capture_defrag_fragments_total", "IP fragments taken into reassembly (not packets of their own).", nil, nil)
	descDefragDatagrams = prometheus.NewDesc("flowmon_capture_defrag_datagrams_total", "IP datagrams reassembled from fragments, each one packet.", nil, nil)
	descDefragDropped   = prometheus.NewDesc("flowmon_capture_defrag_dropped_fragments_total", "IP fragments taken into reassembly and dropped, by reason (timeout, table_full, bytes_full, too_large, too_many_fragments, invalid).", []string{"reason"}, nil)
	descDefragHeld      = prometheus.NewDesc("flowmon_capture_defrag_held_fragments", "IP fragments held in datagrams not yet whole.", nil, nil)
	descDefragPassed    = prometheus.NewDesc("flowmon_capture_defrag_passed_fragments_total", "IP fragments handed on unreassembled, cut short by the snaplen.", nil, nil)
	descUnique          = prometheus.NewDesc("flowmon_pipeline_unique_packets_total", "Decoded packets that were not capture duplicates.", nil, nil)
	// The window gauges describe the last published window, the one
	// /api/v1/ccf serves, not the open one: the open window is empty after
	// a replay's end (its final window is published and a new one begun),
	// and mid-window it is a count on its way up. An operator comparing
	// the metric with a peer's filter, or scraping after a replay, wants
	// the window that is done.
	descFCFlows = prometheus.NewDesc("flowmon_flowcount_window_flows",
		"Distinct flows in the last published flow-count window (the one "+flowcount.Path+" serves; after a replay, its final window).", nil, nil)
	descFCDropped = prometheus.NewDesc("flowmon_flowcount_dropped_flows",
		"Packets of new flows the full filter could not count, in the last published flow-count window.", nil, nil)
	descFCMem     = prometheus.NewDesc("flowmon_flowcount_memory_bytes", "Memory of one window's counting cuckoo filter.", nil, nil)
	descFCWindows = prometheus.NewDesc("flowmon_flowcount_windows_total", "Windows completed and published.", nil, nil)
	// The flow table's overload: at max-flows a new flow's SYN is shed and
	// any other new flow times out an open one early.
	descFTOpen  = prometheus.NewDesc("flowmon_flowtable_open_flows", "Flows the flow table holds (at most max-flows).", nil, nil)
	descFTMax   = prometheus.NewDesc("flowmon_flowtable_max_flows", "The flow table's cap (max-flows).", nil, nil)
	descFTAtCap = prometheus.NewDesc("flowmon_flowtable_timed_out_at_cap_total", "Open flows timed out early because the flow table was full.", nil, nil)
	descFTShed  = prometheus.NewDesc("flowmon_flowtable_shed_syns_total", "New flows whose SYN came while the flow table was full: counted, not entered (entered at their next packet).", nil, nil)
	// The target beside the measured error (flowmon_acsm_shadow_*), so
	// that a dashboard or an alerting rule compares the two without
	// knowing each agent's configuration. It is the pipeline's, not a
	// shard's: the stage collector sums the shards' samples.
	descACSMTarget = prometheus.NewDesc("flowmon_acsm_target_error_ratio",
		"The ACSM's target error rate (p), which the shadow's measured error (flowmon_acsm_shadow_disagreements_total / flowmon_acsm_shadow_checks_total) is held to; absent for the exact backend.", nil, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPackets, descBytes, descNetwork, descTransport, descSkipped,
		descDefragFrags, descDefragDatagrams, descDefragDropped, descDefragHeld, descDefragPassed,
		descUnique, descFCFlows, descFCDropped, descFCMem, descFCWindows, descFTOpen, descFTMax, descFTAtCap, descFTShed, descACSMTarget} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.pub.mu.Lock()
	st := c.pub.capture
	c.pub.mu.Unlock()
	var fc flowcount.Stats
	var unique uint64
	var ft flowTableCounts
	var maxFlows uint64
	counters := make([]*flowcount.Counter, len(c.shards))
	for i, s := range c.shards {
		unique += s.publishedCounts().unique
		ft.add(s.flowTableCounts())
		maxFlows += s.flows.Stats().MaxFlows // fixed when the table is made
		st := s.flowcountStats()
		fc.Bytes += st.Bytes
		fc.Windows = max(fc.Windows, st.Windows)
		counters[i] = s.counter
	}
	last := flowcount.LastWindow(counters...)

	counter := func(d *prometheus.Desc, v uint64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), lv...)
	}
	gauge := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	for name, n := range st.LinkCounts() {
		counter(descPackets, n, name)
	}
	counter(descBytes, st.Bytes)
	for name, n := range st.NetworkCounts() {
		counter(descNetwork, n, name)
	}
	for name, n := range st.TransportCounts() {
		counter(descTransport, n, name)
	}
	for _, r := range capture.Reasons() {
		counter(descSkipped, st.Skipped[r], r.String())
	}
	df := &st.Defrag
	counter(descDefragFrags, df.Fragments)
	counter(descDefragDatagrams, df.Datagrams)
	for _, d := range capture.DefragDrops() {
		counter(descDefragDropped, df.Dropped[d], d.String())
	}
	gauge(descDefragHeld, df.Held)
	counter(descDefragPassed, df.Passed)
	counter(descUnique, unique)
	gauge(descFCFlows, last.Flows)
	gauge(descFCDropped, last.Dropped)
	gauge(descFCMem, fc.Bytes)
	counter(descFCWindows, fc.Windows)
	gauge(descFTOpen, ft.open)
	gauge(descFTMax, maxFlows)
	counter(descFTAtCap, ft.atCap)
	counter(descFTShed, ft.shed)
	if c.target > 0 {
		ch <- prometheus.MustNewConstMetric(descACSMTarget, prometheus.GaugeValue, c.target)
	}
}

// stageCollector exports the samples the stages describe themselves (they
// do not import the Prometheus client). Which samples a stage has is
// fixed when it is built (the dedup windows' structures, the ACSM's
// backend and shadow), so the collector takes their descriptions from
// the first pass over them, and describes those.
type stageCollector struct {
	shards []*shard
	descs  map[string]*prometheus.Desc // by metric name
}

func newStageCollector(shards []*shard) *stageCollector {
	c := &stageCollector{shards: shards, descs: map[string]*prometheus.Desc{}}
	c.samples(func(name, help string, _ bool, label, _ string, _ float64) {
		if c.descs[name] == nil {
			var labels []string
			if label != "" {
				labels = []string{label}
			}
			c.descs[name] = prometheus.NewDesc(name, help, labels, nil)
		}
	})
	return c
}

func (c *stageCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *stageCollector) Collect(ch chan<- prometheus.Metric) {
	c.samples(func(name, help string, isCounter bool, label, value string, v float64) {
		d := c.descs[name]
		if d == nil {
			ch <- prometheus.NewInvalidMetric(prometheus.NewDesc(name, help, nil, nil),
				fmt.Errorf("stage metric %s appeared after the pipeline was built", name))
			return
		}
		var values []string
		if label != "" {
			values = []string{value}
		}
		typ := prometheus.GaugeValue
		if isCounter {
			typ = prometheus.CounterValue
		}
		m, err := prometheus.NewConstMetric(d, typ, v, values...)
		if err != nil {
			m = prometheus.NewInvalidMetric(d, err)
		}
		ch <- m
	})
}

// samples calls f with each of the stages' samples: the dedup stages'
// summed (dedup.Metrics), the trackers' summed by name and label.
func (c *stageCollector) samples(f func(name, help string, isCounter bool, label, value string, v float64)) {
	// One dedup per shard: Metrics sums them.
	var ds []*dedup.Dedup
	for _, sh := range c.shards {
		if sh.dedup != nil {
			ds = append(ds, sh.dedup)
		}
	}
	if ds != nil {
		for _, m := range dedup.Metrics(ds...) {
			label := "window"
			if m.Window == "" {
				label = ""
			}
			f(m.Name, m.Help, m.Counter, label, m.Window, m.Value)
		}
	}
	// The shards' trackers export the same samples: sum them (memory,
	// flows, counters all add up over disjoint shards).
	type key struct{ name, label, value string }
	type sum struct {
		help    string
		counter bool
		v       float64
	}
	var order []key
	sums := map[key]*sum{}
	for _, sh := range c.shards {
		sh.tracker.Samples(func(s acsm.Sample) {
			k := key{s.Name, s.Label, s.LabelValue}
			if sums[k] == nil {
				sums[k] = &sum{help: s.Help, counter: s.Counter}
				order = append(order, k)
			}
			sums[k].v += s.Value
		})
	}
	for _, k := range order {
		s := sums[k]
		label := k.label
		if k.value == "" {
			label = ""
		}
		f("flowmon_acsm_"+k.name, s.help, s.counter, label, k.value, s.v)
	}
}
