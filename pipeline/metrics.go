package pipeline

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/pipeline/dedup"
	"github.com/flowmon/flowmon/pipeline/flowcount"
	"github.com/flowmon/flowmon/rules"
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
	// The flow table's overload: at max-flows a new flow's SYN is shed and
	// any other new flow times out an open one early.
	descFTOpen  = prometheus.NewDesc("flowmon_flowtable_open_flows", "Flows the flow table holds (at most max-flows).", nil, nil)
	descFTMax   = prometheus.NewDesc("flowmon_flowtable_max_flows", "The flow table's cap (max-flows).", nil, nil)
	descFTAtCap = prometheus.NewDesc("flowmon_flowtable_timed_out_at_cap_total", "Open flows timed out early because the flow table was full.", nil, nil)
	descFTShed  = prometheus.NewDesc("flowmon_flowtable_shed_syns_total", "New flows whose SYN came while the flow table was full: counted, not entered (entered at their next packet).", nil, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPackets, descBytes, descNetwork, descTransport, descSkipped,
		descUnique, descFCFlows, descFCDropped, descFCMem, descFCWindows, descFTOpen, descFTMax, descFTAtCap, descFTShed} {
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
		maxFlows += uint64(s.flows.maxFlows) // fixed when the table is made
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
	gauge(descFTOpen, ft.open)
	gauge(descFTMax, maxFlows)
	counter(descFTAtCap, ft.atCap)
	counter(descFTShed, ft.shed)

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

// rulesCollector exports the rules engine's and its alerts' counts at
// scrape time. Rule names are labels: they come from the rules file
// (configuration), never from traffic.
type rulesCollector struct{ eng *rules.Engine }

func (c *rulesCollector) Describe(chan<- *prometheus.Desc) {}

func (c *rulesCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.eng.Stats()
	constMetric(ch, "flowmon_rules_loaded", "Rules in effect.", false, "", "", float64(st.Rules))
	constMetric(ch, "flowmon_rules_evaluations_total", "Rules tried on a packet.", true, "", "", float64(st.Evaluations))
	constMetric(ch, "flowmon_rules_late_packets_total", "Packets a counting rule left out: their window was two or more behind the rules' clock, its counters already reused.", true, "", "", float64(st.Late))
	for name, b := range st.SketchBytes {
		constMetric(ch, "flowmon_rules_sketch_bytes", "Memory of a rule's per-key counters (three windows), fixed by its error.", false, "rule", name, float64(b))
	}
	constMetric(ch, "flowmon_rules_reloads_total", "Reloads of the rules file tried.", true, "", "", float64(st.Reloads))
	constMetric(ch, "flowmon_rules_reload_failures_total", "Reloads refused (the old rules stayed).", true, "", "", float64(st.ReloadFails))
	ok := 0.0
	if st.LastReloadOK {
		ok = 1
	}
	constMetric(ch, "flowmon_rules_last_reload_successful", "Whether the last reload of the rules file succeeded.", false, "", "", ok)
	constMetric(ch, "flowmon_rules_last_reload_success_timestamp_seconds", "When the rules were last (re)loaded, Unix time.", false, "", "", float64(st.LastReload))
	m := c.eng.Manager()
	ms := m.Stats()
	for name, rc := range ms.ByRule {
		for _, x := range []struct {
			name, help string
			v          uint64
		}{
			{"flowmon_alerts_fired_total", "Alerts fired.", rc.Fired},
			{"flowmon_alerts_resolved_total", "Alerts resolved.", rc.Resolved},
			{"flowmon_alerts_suppressed_total", "Repeats folded into a firing alert within its suppress window.", rc.Suppressed},
		} {
			ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(x.name, x.help, []string{"rule", "severity"}, nil),
				prometheus.CounterValue, float64(x.v), name, rc.Severity)
		}
	}
	constMetric(ch, "flowmon_alerts_active", "Alerts firing.", false, "", "", float64(ms.Active))
	constMetric(ch, "flowmon_alerts_pending", "Alerts waiting for their rule's for.", false, "", "", float64(ms.Pending))
	constMetric(ch, "flowmon_alerts_untracked_total", "Alerts fired while the active table was full (they cannot fold or resolve).", true, "", "", float64(ms.Untracked))
	constMetric(ch, "flowmon_alerts_suppression_bytes", "Memory of the suppression filters.", false, "", "", float64(ms.SuppressionBytes))
	for _, s := range m.Sinks() {
		ss := s.Stats()
		for _, x := range []struct {
			name, help string
			counter    bool
			v          uint64
		}{
			{"flowmon_alerts_sink_sent_total", "Alerts a sink delivered.", true, ss.Sent},
			{"flowmon_alerts_sink_failed_total", "Delivery attempts that failed (retried).", true, ss.Failed},
			{"flowmon_alerts_sink_dropped_total", "Alerts a sink dropped (queue full, or refused for good).", true, ss.Dropped},
			{"flowmon_alerts_sink_queue_length", "Alerts waiting in a sink's queue.", false, ss.Queued},
		} {
			constMetric(ch, x.name, x.help, x.counter, "sink", s.Name(), float64(x.v))
		}
	}
}
