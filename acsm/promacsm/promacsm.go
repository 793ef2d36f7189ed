//go:build flowmon_prom

// Package promacsm exports an acsm.Tracker's metrics to Prometheus as
// flowmon_acsm_* (acsm itself does not import the Prometheus client). The
// collector reads the tracker's published counters at scrape time and is
// safe for concurrent use.
//
// The build tag flowmon_prom keeps this package out of the build until
// go.sum lists the Prometheus client's own dependencies (client_model,
// common, procfs, protobuf, perks, xxhash); drop the tag then.
package promacsm

import (
	"fmt"

	"github.com/flowmon/flowmon/acsm"
	"github.com/prometheus/client_golang/prometheus"
)

// Register registers t's metrics on reg; a nil reg does nothing. Trackers
// of several workers on one registry need distinct Config.ConstLabels.
func Register(reg prometheus.Registerer, t *acsm.Tracker, constLabels prometheus.Labels) error {
	if reg == nil {
		return nil
	}
	if err := reg.Register(&collector{t: t, labels: constLabels}); err != nil {
		return fmt.Errorf("register acsm metrics: %w", err)
	}
	return nil
}

type collector struct {
	t      *acsm.Tracker
	labels prometheus.Labels
}

// Describe sends nothing: the collector is unchecked, its metric set is
// fixed by acsm.Tracker.Samples.
func (c *collector) Describe(chan<- *prometheus.Desc) {}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.t.Samples(func(s acsm.Sample) {
		var labels []string
		var values []string
		if s.Label != "" {
			labels, values = []string{s.Label}, []string{s.LabelValue}
		}
		d := prometheus.NewDesc("flowmon_acsm_"+s.Name, s.Help, labels, c.labels)
		typ := prometheus.GaugeValue
		if s.Counter {
			typ = prometheus.CounterValue
		}
		m, err := prometheus.NewConstMetric(d, typ, s.Value, values...)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(d, err)
			return
		}
		ch <- m
	})
}
