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
	MetricPackets        = "flowmon_dedup_packets_total"
	MetricDuplicates     = "flowmon_dedup_duplicates_total"
	MetricRetrans        = "flowmon_dedup_retransmissions_total"
	MetricFPP            = "flowmon_dedup_estimated_false_positive_ratio"
	MetricMemory         = "flowmon_dedup_memory_bytes"
	MetricForgottenEarly = "flowmon_dedup_forgotten_early_total"
	// The FBF's (Config.FBF).
	MetricFilters   = "flowmon_dedup_filters"
	MetricRefresh   = "flowmon_dedup_refresh_period_seconds"
	MetricRefreshes = "flowmon_dedup_refreshes_total"
)

// Metrics aggregates the published snapshots of ds (one Dedup per worker,
// all built from one Config): counters and memory are summed, the
// estimate and the period are the largest. Safe for concurrent use with
// the owners.
func Metrics(ds ...*Dedup) []Metric {
	var pk, du, re float64
	type win struct {
		fpp, mem, overwritten, filters, refresh, refreshes float64
		on, fbf                                            bool
	}
	var w [2]win
	add := func(i int, s WindowStats) {
		w[i].on, w[i].fbf = true, s.Structure == StructureFBF
		w[i].fpp = max(w[i].fpp, s.EstimatedFPP)
		w[i].mem += float64(s.MemoryBytes)
		w[i].overwritten += float64(s.Overwritten)
		w[i].filters += float64(s.FBF.Filters)
		w[i].refresh = max(w[i].refresh, s.FBF.Refresh.Seconds())
		w[i].refreshes += float64(s.FBF.Refreshes)
	}
	for _, d := range ds {
		s := d.Stats()
		pk += float64(s.Packets)
		du += float64(s.Duplicates)
		re += float64(s.Retransmissions)
		add(0, s.Window)
		if s.RetransEnabled {
			add(1, s.Retrans)
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
			Metric{MetricFPP, "Largest per-worker estimate of the false-positive probability (the fingerprint table's load; the FBF's Equations 1-3, correlated model).", false, name, w[i].fpp},
			Metric{MetricMemory, "Memory of the windows over all workers.", false, name, w[i].mem},
		)
		if !w[i].fbf {
			out = append(out, Metric{MetricForgottenEarly, "Fingerprints the table forgot before their window ended (a bucket overwrote them while live): their duplicates would be kept.", true, name, w[i].overwritten})
			continue
		}
		out = append(out,
			Metric{MetricFilters, "Constituent Bloom filters (N+2) over all workers.", false, name, w[i].filters},
			Metric{MetricRefresh, "Largest per-worker FBF refresh period.", false, name, w[i].refresh},
			Metric{MetricRefreshes, "FBF refresh cascades over all workers.", true, name, w[i].refreshes},
		)
	}
	return out
}
