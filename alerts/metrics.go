package alerts

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// The manager's and its sinks' metrics. Rule and sink names are labels:
// they come from configuration, never from traffic.
var (
	descFired      = prometheus.NewDesc("flowmon_alerts_fired_total", "Alerts fired.", []string{"rule", "severity"}, nil)
	descResolved   = prometheus.NewDesc("flowmon_alerts_resolved_total", "Alerts resolved.", []string{"rule", "severity"}, nil)
	descSuppressed = prometheus.NewDesc("flowmon_alerts_suppressed_total",
		"Repeats folded into a firing alert within its suppress window.", []string{"rule", "severity"}, nil)
	descActive    = prometheus.NewDesc("flowmon_alerts_active", "Alerts firing.", nil, nil)
	descPending   = prometheus.NewDesc("flowmon_alerts_pending", "Alerts waiting for their rule's for.", nil, nil)
	descUntracked = prometheus.NewDesc("flowmon_alerts_untracked_total",
		"Alerts fired while the active table was full (they cannot fold or resolve).", nil, nil)
	descSuppressionBytes = prometheus.NewDesc("flowmon_alerts_suppression_bytes", "Memory of the suppression filters.", nil, nil)
	descSinkSent         = prometheus.NewDesc("flowmon_alerts_sink_sent_total", "Alerts a sink delivered.", []string{"sink"}, nil)
	descSinkFailed       = prometheus.NewDesc("flowmon_alerts_sink_failed_total", "Delivery attempts that failed (retried).", []string{"sink"}, nil)
	descSinkDropped      = prometheus.NewDesc("flowmon_alerts_sink_dropped_total",
		"Alerts a sink dropped (queue full, or refused for good).", []string{"sink"}, nil)
	descSinkQueue = prometheus.NewDesc("flowmon_alerts_sink_queue_length", "Alerts waiting in a sink's queue.", []string{"sink"}, nil)
)

// Register registers the manager's and its sinks' metrics
// (flowmon_alerts_*; whether a sink delivers is its components', Sink.Health) on reg, read from Stats at scrape time. A nil reg
// registers nothing.
func (m *Manager) Register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	if err := reg.Register(managerCollector{m}); err != nil {
		return fmt.Errorf("register alerts metrics: %w", err)
	}
	return nil
}

// managerCollector exports a manager's and its sinks' counts at scrape
// time.
type managerCollector struct{ m *Manager }

func (managerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descFired, descResolved, descSuppressed, descActive, descPending,
		descUntracked, descSuppressionBytes, descSinkSent, descSinkFailed, descSinkDropped, descSinkQueue} {
		ch <- d
	}
}

func (c managerCollector) Collect(ch chan<- prometheus.Metric) {
	metric := func(d *prometheus.Desc, t prometheus.ValueType, v uint64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, float64(v), lv...)
	}
	ms := c.m.Stats()
	for name, rc := range ms.ByRule {
		metric(descFired, prometheus.CounterValue, rc.Fired, name, rc.Severity)
		metric(descResolved, prometheus.CounterValue, rc.Resolved, name, rc.Severity)
		metric(descSuppressed, prometheus.CounterValue, rc.Suppressed, name, rc.Severity)
	}
	metric(descActive, prometheus.GaugeValue, uint64(ms.Active))
	metric(descPending, prometheus.GaugeValue, uint64(ms.Pending))
	metric(descUntracked, prometheus.CounterValue, ms.Untracked)
	metric(descSuppressionBytes, prometheus.GaugeValue, uint64(ms.SuppressionBytes))
	for _, s := range c.m.Sinks() {
		ss := s.Stats()
		metric(descSinkSent, prometheus.CounterValue, ss.Sent, s.Name())
		metric(descSinkFailed, prometheus.CounterValue, ss.Failed, s.Name())
		metric(descSinkDropped, prometheus.CounterValue, ss.Dropped, s.Name())
		metric(descSinkQueue, prometheus.GaugeValue, ss.Queued, s.Name())
	}
}
