package hostpairs

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	descNovel = prometheus.NewDesc("flowmon_history_novel_pairs_total", "New flows between hosts the flow history had not seen together.", nil, nil)
	descSeen  = prometheus.NewDesc("flowmon_history_seen_pairs_total", "New flows between hosts the flow history had seen together.", nil, nil)
	descErr   = prometheus.NewDesc("flowmon_history_errors_total", "Flow history lookups or inserts that failed on disk (answered not novel).", nil, nil)
	descDisk  = prometheus.NewDesc("flowmon_history_disk_bytes", "The flow history's levels on disk.", nil, nil)
	descUnrec = prometheus.NewDesc("flowmon_history_unrecorded_pairs_total", "Host pairs the flow history could not record because its filter was still merging (novel again when next seen).", nil, nil)
	descRAM   = prometheus.NewDesc("flowmon_history_ram_bytes", "The flow history's filters' RAM: the newest generation's QF0s and every level's page checksums.", nil, nil)
	descGens  = prometheus.NewDesc("flowmon_history_generations", "The flow history's live generations (one without a horizon).", nil, nil)
)

// Register registers the history's metrics (flowmon_history_*) on reg,
// read from Stats at scrape time. A nil reg registers nothing.
func (h *History) Register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	if err := reg.Register(collector{h}); err != nil {
		return fmt.Errorf("register flow history metrics: %w", err)
	}
	return nil
}

// collector exports a history's Stats at scrape time.
type collector struct{ h *History }

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descNovel, descSeen, descErr, descDisk, descUnrec, descRAM, descGens} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	st := c.h.Stats()
	ch <- prometheus.MustNewConstMetric(descNovel, prometheus.CounterValue, float64(st.Novel))
	ch <- prometheus.MustNewConstMetric(descSeen, prometheus.CounterValue, float64(st.Seen))
	ch <- prometheus.MustNewConstMetric(descErr, prometheus.CounterValue, float64(st.Errors))
	ch <- prometheus.MustNewConstMetric(descDisk, prometheus.GaugeValue, float64(st.DiskBytes))
	ch <- prometheus.MustNewConstMetric(descUnrec, prometheus.CounterValue, float64(st.Unrecorded))
	ch <- prometheus.MustNewConstMetric(descRAM, prometheus.GaugeValue, float64(st.RAMBytes))
	ch <- prometheus.MustNewConstMetric(descGens, prometheus.GaugeValue, float64(len(st.Generations)))
}
