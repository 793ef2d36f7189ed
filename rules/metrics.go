package rules

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// The engine's metrics. Rule names are labels: they come from the rules
// file (configuration), never from traffic.
var (
	descLoaded = prometheus.NewDesc("flowmon_rules_loaded", "Rules in effect.", nil, nil)
	descEvals  = prometheus.NewDesc("flowmon_rules_evaluations_total", "Rules tried on a packet.", nil, nil)
	descLate   = prometheus.NewDesc("flowmon_rules_late_packets_total",
		"Packets a counting rule left out: their window was two or more behind the rules' clock, its counters already reused.", nil, nil)
	descSketch = prometheus.NewDesc("flowmon_rules_sketch_bytes",
		"Memory of a rule's per-key counters (three windows), fixed by its error.", []string{"rule"}, nil)
	descReloads     = prometheus.NewDesc("flowmon_rules_reloads_total", "Reloads of the rules file tried.", nil, nil)
	descReloadFails = prometheus.NewDesc("flowmon_rules_reload_failures_total", "Reloads refused (the old rules stayed).", nil, nil)
	descReloadOK    = prometheus.NewDesc("flowmon_rules_last_reload_successful", "Whether the last reload of the rules file succeeded.", nil, nil)
	descReloadTime  = prometheus.NewDesc("flowmon_rules_last_reload_success_timestamp_seconds", "When the rules were last (re)loaded, Unix time.", nil, nil)
)

// Register registers the engine's metrics (flowmon_rules_*) on reg,
// read from Stats at scrape time; its manager's are the manager's to
// register (alerts.Manager.Register). A nil reg registers nothing.
func (e *Engine) Register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	if err := reg.Register(engineCollector{e}); err != nil {
		return fmt.Errorf("register rules metrics: %w", err)
	}
	return nil
}

// engineCollector exports an engine's Stats at scrape time.
type engineCollector struct{ e *Engine }

func (engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLoaded, descEvals, descLate, descSketch,
		descReloads, descReloadFails, descReloadOK, descReloadTime} {
		ch <- d
	}
}

func (c engineCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.e.Stats()
	gauge := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge(descLoaded, float64(st.Rules))
	counter(descEvals, st.Evaluations)
	counter(descLate, st.Late)
	for name, b := range st.SketchBytes {
		gauge(descSketch, float64(b), name)
	}
	counter(descReloads, st.Reloads)
	counter(descReloadFails, st.ReloadFails)
	ok := 0.0
	if st.LastReloadOK {
		ok = 1
	}
	gauge(descReloadOK, ok)
	gauge(descReloadTime, float64(st.LastReload))
}
