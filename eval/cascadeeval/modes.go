package cascadeeval

import (
	"fmt"
	"strings"
	"time"
)

// writeModes prints the insertion latencies of the two merge modes, one
// row a mode and size, and what they mean.
func writeModes(sb *strings.Builder, rs []*Result) {
	if len(rs) == 0 {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(sb, format, a...) }
	p("\n## Insert latency: the paper's synchronous merges against background merges\n\n")
	p("The same keys inserted twice, each insertion timed: with the paper's merges, inside the insertion that finds QF0 full (`cascade.Options.SyncMerge`; one QF0 of the whole budget), and with background merges (the default: two QF0s of half the budget, a full one frozen and merged on its own goroutine while the other takes insertions; `TryInsert` returns `ErrBusy` when both are full during a merge, and the harness then calls `Insert`, which waits for the merge). The inserts/s of this section and of the tables above include reading the clock at every insertion.\n\n")
	p("| RAM budget | merges (longest) | QF0s × fingerprints a merge | inserts/s | median insert | p99 | p99.9 | max insert | insertions that waited for a merge (their time) | no wait below |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		for _, m := range []*InsertRun{&r.Sync, &r.BG} {
			below := "—"
			if !m.SyncMerge {
				below = si(m.calmRate()) + " inserts/s"
			}
			p("| %s, %s | %d (%s) | %s | %s | %s | %s | %s | **%s** | %s | %s |\n", mib(r.Cfg.RAMBytes), m.mode(), m.CF.Merges, ns(m.CF.LongestMerge),
				m.qf0s(), si(m.Insert.PerSec()), ns(m.Latency.Quantile(0.5)), ns(m.Latency.Quantile(0.99)), ns(m.Latency.Quantile(0.999)),
				ns(m.Latency.Max), m.waited(), below)
		}
	}
	r := rs[0]
	fill := time.Duration(float64(r.BG.CF.QF0Capacity) / r.BG.Insert.PerSec() * float64(time.Second))
	p("\nWith synchronous merges the longest insertion is the longest merge (%s with %s), the largest level's, as in the paper's Figure 3: every insertion that finds QF0 full runs a merge, and in the agent every shard's new flows would wait behind it. With background merges no insertion runs a merge; the ones that wait are those that find the second QF0 full while a merge still runs, and the longest wait is what is left of the longest merge then. ",
		ns(r.Sync.Latency.Max), mib(r.Cfg.RAMBytes))
	p("This harness inserts as fast as one core allows, so a QF0 of %s fingerprints fills in %s, less than the large merges take (the longest: %s): they fall behind, %d insertions waited, and a caller that may not wait (the flow history's `TryInsert`) would have left them unrecorded. ",
		commas(r.BG.CF.QF0Capacity), ns(fill), ns(r.BG.CF.LongestMerge), r.BG.Busy)
	p("Merges run one at a time, each started when a QF0 fills, so below a QF0's fingerprints over the longest merge (the *no wait below* column) every merge ends before the other QF0 fills and no insertion waits at all: %s inserts/s here, against a flow history's thousands of new host pairs a second. ",
		si(r.BG.calmRate()))
	p("The double buffer is the simplest deamortization; the paper's (a little merging at each insertion) would bound the wait at any rate. ")
	var ratios []string
	for _, r := range rs {
		ratios = append(ratios, fmt.Sprintf("%.2f× at %s", r.BG.Insert.PerSec()/r.Sync.Insert.PerSec(), mib(r.Cfg.RAMBytes)))
	}
	p("The median insertion is the QF0's own in both modes. A background cascade is the synchronous cascade of half the budget (one more level, twice the merges), its merges on the machine's other core alongside the insertions; its throughput over the synchronous one's: %s.\n",
		strings.Join(ratios, ", "))
}

// calmRate is the insertion rate below which no insertion waits for a
// background merge: a QF0's fingerprints over the longest merge.
func (m *InsertRun) calmRate() float64 {
	return float64(m.CF.QF0Capacity) / m.CF.LongestMerge.Seconds()
}

// writeModes prints one result's two merge modes side by side.
func (r *Result) writeModes(sb *strings.Builder) {
	p := func(format string, a ...any) { fmt.Fprintf(sb, format, a...) }
	s, b := &r.Sync, &r.BG
	p("\nThe two merge modes, the same keys:\n\n| | synchronous merges (the paper's) | background merges (the default) |\n|---|---:|---:|\n")
	p("| QF0s | %s (%d slots each) | %s (%d slots each) |\n", s.qf0s(), s.CF.QF0Slots, b.qf0s(), b.CF.QF0Slots)
	p("| inserts/s | %s (%s) | %s (%s) |\n", si(s.Insert.PerSec()), dur(s.Insert.Elapsed), si(b.Insert.PerSec()), dur(b.Insert.Elapsed))
	p("| merges | %d | %d |\n", s.CF.Merges, b.CF.Merges)
	p("| insert latency: median, p99, p99.9 | %s, %s, %s | %s, %s, %s |\n",
		ns(s.Latency.Quantile(0.5)), ns(s.Latency.Quantile(0.99)), ns(s.Latency.Quantile(0.999)),
		ns(b.Latency.Quantile(0.5)), ns(b.Latency.Quantile(0.99)), ns(b.Latency.Quantile(0.999)))
	p("| longest insertion | **%s** | **%s** |\n", ns(s.Latency.Max), ns(b.Latency.Max))
	p("| insertions that waited for a merge | %s | %s |\n", s.waited(), b.waited())
	p("| levels after | %s | %s |\n", levelList(s), levelList(b))
}

func (m *InsertRun) mode() string {
	if m.SyncMerge {
		return "synchronous"
	}
	return "background"
}

func (m *InsertRun) qf0s() string {
	n := 2
	if m.SyncMerge {
		n = 1
	}
	return fmt.Sprintf("%d × %s", n, commas(m.CF.QF0Capacity))
}

// waited is the insertions that waited for a merge and their time: with
// synchronous merges those that ran one, with background merges those
// refused by TryInsert.
func (m *InsertRun) waited() string {
	if m.SyncMerge {
		return fmt.Sprintf("%d, each ran a merge (%s)", m.Merges, dur(m.MergeTime))
	}
	return fmt.Sprintf("%d (%s)", m.Busy, dur(m.BusyTime))
}

func levelList(m *InsertRun) string {
	var ls []string
	for _, l := range m.CF.Levels {
		ls = append(ls, fmt.Sprint(l.Level))
	}
	return strings.Join(ls, ", ")
}

// ns prints a short duration to three figures.
func ns(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%d ns", d.Nanoseconds())
	case d < time.Millisecond:
		return fmt.Sprintf("%.3g µs", float64(d)/float64(time.Microsecond))
	}
	return dur(d)
}
