package engine

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/dedup"
	"github.com/flowmon/flowmon/internal/flowcount"
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
}

var (
	descPackets   = prometheus.NewDesc("flowmon_capture_packets_total", "Records read, by link type.", []string{"link"}, nil)
	descBytes     = prometheus.NewDesc("flowmon_capture_bytes_total", "Wire bytes of the records read.", nil, nil)
	descNetwork   = prometheus.NewDesc("flowmon_capture_network_packets_total", "Records by network layer.", []string{"network"}, nil)
	descTransport = prometheus.NewDesc("flowmon_capture_transport_packets_total", "Decoded packets by transport.", []string{"transport"}, nil)
	descSkipped   = prometheus.NewDesc("flowmon_capture_skipped_packets_total", "Records that yielded no flow packet, by reason (malformed input, or not IP).", []string{"reason"}, nil)
	descUnique    = prometheus.NewDesc("flowmon_pipeline_unique_packets_total", "Decoded packets that were not capture duplicates.", nil, nil)
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
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPackets, descBytes, descNetwork, descTransport, descSkipped,
		descUnique, descFCFlows, descFCDropped, descFCMem, descFCWindows} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.pub.mu.Lock()
	st := c.pub.capture
	c.pub.mu.Unlock()
	var fc flowcount.Stats
	var unique uint64
	counters := make([]*flowcount.Counter, len(c.shards))
	for i, s := range c.shards {
		unique += s.publishedCounts().unique
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
	counter(descUnique, unique)
	gauge(descFCFlows, last.Flows)
	gauge(descFCDropped, last.Dropped)
	gauge(descFCMem, fc.Bytes)
	counter(descFCWindows, fc.Windows)

}

// stageCollector exports the samples the stages describe themselves (they
// do not import the Prometheus client). It is unchecked: its metric set is
// the stages' to define.
type stageCollector struct {
	shards []*shard
}

func (c *stageCollector) Describe(chan<- *prometheus.Desc) {}

func (c *stageCollector) Collect(ch chan<- prometheus.Metric) {
	// One dedup per shard: Metrics sums them.
	var ds []*dedup.Dedup
	for _, sh := range c.shards {
		if sh.dedup != nil {
			ds = append(ds, sh.dedup)
		}
	}
	if ds != nil {
		for _, m := range dedup.Metrics(ds...) {
			constMetric(ch, m.Name, m.Help, m.Counter, "window", m.Window, m.Value)
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
		constMetric(ch, "flowmon_acsm_"+k.name, s.help, s.counter, k.label, k.value, s.v)
	}
}

func constMetric(ch chan<- prometheus.Metric, name, help string, isCounter bool, label, value string, v float64) {
	var labels, values []string
	if label != "" && value != "" {
		labels, values = []string{label}, []string{value}
	}
	typ := prometheus.GaugeValue
	if isCounter {
		typ = prometheus.CounterValue
	}
	m, err := prometheus.NewConstMetric(prometheus.NewDesc(name, help, labels, nil), typ, v, values...)
	if err != nil {
		m = prometheus.NewInvalidMetric(prometheus.NewDesc(name, help, labels, nil), err)
	}
	ch <- m
}
