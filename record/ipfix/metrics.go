package ipfix

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The exporter's metrics. A collector is labelled by its address as
// configured (HOST:PORT): at most MaxCollectors values, set by the
// operator and not by the traffic, and the address is what the operator
// looks for in a dashboard or an alert.
var (
	descRecords = prometheus.NewDesc("flowmon_ipfix_records_exported_total",
		"IPFIX data records sent to a collector.", []string{"collector"}, nil)
	descDropped = prometheus.NewDesc("flowmon_ipfix_records_dropped_total",
		"IPFIX data records not sent: queue_full (the collector's queue had no room), send_failed (in a message whose write failed), unsent (queued when a flush or the stop gave up waiting), refused (in the message a UDP collector's port unreachable came back for: most likely not taken).", []string{"collector", "reason"}, nil)
	descMessages = prometheus.NewDesc("flowmon_ipfix_messages_total",
		"IPFIX messages sent to a collector, templates included.", []string{"collector"}, nil)
	descBytes = prometheus.NewDesc("flowmon_ipfix_bytes_total",
		"Bytes of IPFIX messages sent to a collector.", []string{"collector"}, nil)
	descErrors = prometheus.NewDesc("flowmon_ipfix_errors_total",
		"Failed connections (dial) and writes (send) to a collector.", []string{"collector", "op"}, nil)
	descQueued = prometheus.NewDesc("flowmon_ipfix_queue_records",
		"Records waiting in the collector's queue.", []string{"collector"}, nil)
)

// metrics exports an Exporter's counts at scrape time; whether a
// collector works is flowmon_component_up{component="ipfix:ADDR"}.
type metrics struct{ x *Exporter }

func (m metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRecords, descDropped, descMessages, descBytes, descErrors, descQueued} {
		ch <- d
	}
}

func (m metrics) Collect(ch chan<- prometheus.Metric) {
	for _, s := range m.x.Stats() {
		c := s.Addr
		counter := func(d *prometheus.Desc, v uint64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{c}, labels...)...)
		}
		counter(descRecords, s.Records)
		counter(descDropped, s.DroppedQueue, "queue_full")
		counter(descDropped, s.DroppedSend, "send_failed")
		counter(descDropped, s.DroppedRefused, "refused")
		counter(descDropped, s.DroppedUnsent, "unsent")
		counter(descMessages, s.Messages)
		counter(descBytes, s.Bytes)
		counter(descErrors, s.DialErrors, "dial")
		counter(descErrors, s.SendErrors, "send")
		ch <- prometheus.MustNewConstMetric(descQueued, prometheus.GaugeValue, float64(s.QueuedRecords), c)
	}
}
