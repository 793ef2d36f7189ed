package dedup

// Metric is one sample the engine exports at scrape time (as a Prometheus
// const metric: the module's go.sum does not yet carry client_golang's
// dependencies, so this package does not import it).
type Metric struct {
	Name    string // flowmon_dedup_*
	Help    string
	Counter bool   // a counter (else a gauge)
	Window  string // label window="duplicate"|"retransmission", or "" for none
	Value   float64
}

// Metric names.
const (
	MetricPackets    = "flowmon_dedup_packets_total"
	MetricDuplicates = "flowmon_dedup_duplicates_total"
	MetricRetrans    = "flowmon_dedup_retransmissions_total"
	MetricFPP        = "flowmon_dedup_estimated_false_positive_ratio"
	MetricFilters    = "flowmon_dedup_filters"
	MetricRefresh    = "flowmon_dedup_refresh_period_seconds"
	MetricMemory     = "flowmon_dedup_memory_bytes"
	MetricRefreshes  = "flowmon_dedup_refreshes_total"
)

// Metrics aggregates the published snapshots of ds (one Dedup per worker):
// counters and memory are summed, the estimate and the period are the
// largest. Safe for concurrent use with the owners.
func Metrics(ds ...*Dedup) []Metric {
	var pk, du, re float64
	type win struct {
		fpp, filters, refresh, mem, refreshes float64
		on                                    bool
	}
	var w [2]win
	for _, d := range ds {
		s := d.Stats()
		pk += float64(s.Packets)
		du += float64(s.Duplicates)
		re += float64(s.Retransmissions)
		add := func(i int, fpp float64, filters int, refresh float64, mem, refreshes uint64) {
			w[i].on = true
			w[i].fpp = max(w[i].fpp, fpp)
			w[i].filters += float64(filters)
			w[i].refresh = max(w[i].refresh, refresh)
			w[i].mem += float64(mem)
			w[i].refreshes += float64(refreshes)
		}
		add(0, s.Window.EstimatedFPP, s.Window.Filters, s.Window.Refresh.Seconds(), s.Window.MemoryBytes, s.Window.Refreshes)
		if s.RetransEnabled {
			add(1, s.Retrans.EstimatedFPP, s.Retrans.Filters, s.Retrans.Refresh.Seconds(), s.Retrans.MemoryBytes, s.Retrans.Refreshes)
		}
	}
	out := []Metric{
		{MetricPackets, "Packets checked by the dedup stage.", true, "", pk},
		{MetricDuplicates, "Packets dropped as duplicates seen within the window.", true, "", du},
		{MetricRetrans, "TCP segments marked as retransmissions (not dropped).", true, "", re},
	}
	for i, name := range []string{"duplicate", "retransmission"} {
		if !w[i].on {
			continue
		}
		out = append(out,
			Metric{MetricFPP, "Largest per-worker estimate of the false-positive probability (FBF Equations 1-3, correlated model).", false, name, w[i].fpp},
			Metric{MetricFilters, "Constituent Bloom filters (N+2) over all workers.", false, name, w[i].filters},
			Metric{MetricRefresh, "Largest per-worker FBF refresh period.", false, name, w[i].refresh},
			Metric{MetricMemory, "Memory of the filters over all workers.", false, name, w[i].mem},
			Metric{MetricRefreshes, "FBF refresh cascades over all workers.", true, name, w[i].refreshes},
		)
	}
	return out
}
