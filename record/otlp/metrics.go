package otlp

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The exporter's metrics. There is one endpoint, so no label names it;
// whether it works is flowmon_component_up{component="otlp:ENDPOINT"}.
var (
	descSent = prometheus.NewDesc("flowmon_otlp_records_sent_total",
		"Flow records the OTLP collector took (one log record each).", nil, nil)
	descDropped = prometheus.NewDesc("flowmon_otlp_records_dropped_total",
		"Flow records not delivered over OTLP: queue_full (the queue had no room), rejected (the collector refused them for good: an answer not to retry, or a partial success), unsent (queued when a flush or the stop gave up waiting).", []string{"reason"}, nil)
	descBatches = prometheus.NewDesc("flowmon_otlp_batches_total",
		"OTLP export requests the collector took.", nil, nil)
	descRetries = prometheus.NewDesc("flowmon_otlp_retries_total",
		"OTLP export requests that failed in a way that may pass (connection, HTTP 429/502/503/504, gRPC Unavailable, ...), sent again after a backoff.", nil, nil)
	descBytes = prometheus.NewDesc("flowmon_otlp_sent_bytes_total",
		"Bytes of OTLP export requests sent (gzip-compressed for OTLP/HTTP, before compression for gRPC), retries included.", nil, nil)
	descQueued = prometheus.NewDesc("flowmon_otlp_queue_records",
		"Flow records waiting in the OTLP exporter's queue.", nil, nil)
)

// metrics exports an Exporter's counts at scrape time.
type metrics struct{ x *Exporter }

func (m metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSent, descDropped, descBatches, descRetries, descBytes, descQueued} {
		ch <- d
	}
}

func (m metrics) Collect(ch chan<- prometheus.Metric) {
	s := m.x.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(descSent, s.Sent)
	counter(descDropped, s.DroppedQueue, "queue_full")
	counter(descDropped, s.DroppedRejected, "rejected")
	counter(descDropped, s.DroppedUnsent, "unsent")
	counter(descBatches, s.Batches)
	counter(descRetries, s.Retries)
	counter(descBytes, s.Bytes)
	ch <- prometheus.MustNewConstMetric(descQueued, prometheus.GaugeValue, float64(s.Queued))
}
