package watchlist

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// List names are labels: they come from configuration, never from
// traffic.
var (
	descEntries = prometheus.NewDesc("flowmon_watchlist_entries", "Addresses and prefixes on each watchlist.", []string{"list"}, nil)
	descSat     = prometheus.NewDesc("flowmon_watchlist_saturations_total", "Increments a watchlist filter's 4-bit counters absorbed at 15, where they stick: never a false negative, a little more false-positive rate.", []string{"list"}, nil)
)

// Register registers the set's metrics (flowmon_watchlist_*, one series
// a list) on reg, read at scrape time from the lists the set holds then.
// A nil reg registers nothing.
func (s *Set) Register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	if err := reg.Register(collector{s}); err != nil {
		return fmt.Errorf("register watchlist metrics: %w", err)
	}
	return nil
}

// collector exports a set's lists' figures at scrape time.
type collector struct{ s *Set }

func (collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descEntries
	ch <- descSat
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, name := range c.s.Lists() {
		l := c.s.Get(name)
		if l == nil { // removed since Lists
			continue
		}
		ch <- prometheus.MustNewConstMetric(descEntries, prometheus.GaugeValue, float64(l.Len()), name)
		ch <- prometheus.MustNewConstMetric(descSat, prometheus.CounterValue, float64(l.Saturations()), name)
	}
}
