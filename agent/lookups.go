package agent

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/pipeline/hostpairs"
	"github.com/flowmon/flowmon/pipeline/watchlist"
)

// openWatchlists opens the lists; with dir, each list's filter persists
// in dir/NAME.wl (reopened at the next start without rebuilding), else
// it lives in memory. Bad lines are reported on log and skipped.
func openWatchlists(specs []config.Watchlist, dir string, log io.Writer) (*watchlist.Set, error) {
	var lists []*watchlist.List
	closeAll := func() {
		for _, l := range lists {
			l.Close()
		}
	}
	for _, spec := range specs {
		l, err := openWatchlist(watchlist.Spec{Name: spec.Name, File: spec.File}, dir, log)
		if err != nil {
			closeAll()
			return nil, err
		}
		lists = append(lists, l)
	}
	set, err := watchlist.NewSet(lists...)
	if err != nil {
		closeAll()
		return nil, err
	}
	return set, nil
}

// openWatchlist opens one list, as openWatchlists does.
func openWatchlist(spec watchlist.Spec, dir string, log io.Writer) (*watchlist.List, error) {
	state := ""
	if dir != "" {
		state = filepath.Join(dir, spec.Name+".wl")
	}
	l, opened, lineErrs, err := watchlist.Open(spec.Name, spec.File, state, watchlist.DefaultOptions)
	for _, e := range lineErrs {
		fmt.Fprintf(log, "flowmon: watchlist %s: skipped %v\n", spec.Name, e)
	}
	if err != nil {
		return nil, err
	}
	if opened != "" {
		fmt.Fprintf(log, "flowmon: watchlist %s: %s (%d entries)\n", spec.Name, opened, l.Len())
	}
	return l, nil
}

// useWatchlists gives the rules their lists: a rule naming a list not
// given is an error.
func useWatchlists(al *alerting, set *watchlist.Set) error {
	if al == nil {
		if len(set.Lists()) > 0 {
			return errors.New("watchlists do nothing without rules (--rules none)")
		}
		return nil
	}
	if err := al.eng.SetLookups(set); err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	return nil
}

// historyOptions are the host-pair history's options for h.
func historyOptions(h config.History) hostpairs.Options {
	o := hostpairs.DefaultOptions
	o.Horizon = h.Horizon
	if h.RAM != 0 {
		o.RAMBytes = uint64(h.RAM)
	}
	return o
}

// lookups are what the rules ask beside the packets: the watchlists and
// the flow history.
type lookups struct {
	wl   *watchlist.Set
	hist *hostpairs.History // nil without a history directory
}

// openLookups opens the watchlists (persisted in wlDir when set) and the
// history (in h.Dir when set), gives the lists to the rules and the
// history to the pipeline cfg.
func openLookups(lists []config.Watchlist, wlDir string, h config.History, al *alerting, cfg *pipeline.Config, log io.Writer) (*lookups, error) {
	wl, err := openWatchlists(lists, wlDir, log)
	if err != nil {
		return nil, err
	}
	lk := &lookups{wl: wl}
	if err := useWatchlists(al, wl); err != nil {
		lk.close()
		return nil, err
	}
	if h.Dir != "" {
		if lk.hist, err = hostpairs.Open(h.Dir, historyOptions(h)); err != nil {
			lk.close()
			return nil, err
		}
		cfg.History = lk.hist
	}
	return lk, nil
}

func (lk *lookups) close() error {
	err := lk.wl.Close()
	if lk.hist != nil {
		if herr := lk.hist.Close(); herr != nil {
			err = errors.Join(err, fmt.Errorf("flow history: %w", herr))
		}
	}
	return err
}

var (
	descWLEntries = prometheus.NewDesc("flowmon_watchlist_entries", "Addresses and prefixes on each watchlist.", []string{"list"}, nil)
	descWLSat     = prometheus.NewDesc("flowmon_watchlist_saturations", "Increments a watchlist filter's 4-bit counters absorbed at 15, where they stick: never a false negative, a little more false-positive rate.", []string{"list"}, nil)
	descHistNovel = prometheus.NewDesc("flowmon_history_novel_pairs_total", "New flows between hosts the flow history had not seen together.", nil, nil)
	descHistSeen  = prometheus.NewDesc("flowmon_history_seen_pairs_total", "New flows between hosts the flow history had seen together.", nil, nil)
	descHistErr   = prometheus.NewDesc("flowmon_history_errors_total", "Flow history lookups or inserts that failed on disk (answered not novel).", nil, nil)
	descHistDisk  = prometheus.NewDesc("flowmon_history_disk_bytes", "The flow history's levels on disk.", nil, nil)
	descHistUnrec = prometheus.NewDesc("flowmon_history_unrecorded_pairs_total", "Host pairs the flow history could not record because its filter was still merging (novel again when next seen).", nil, nil)
	descHistRAM   = prometheus.NewDesc("flowmon_history_ram_bytes", "The flow history's filters' RAM: the newest generation's QF0s and every level's page checksums.", nil, nil)
	descHistGens  = prometheus.NewDesc("flowmon_history_generations", "The flow history's live generations (one without a horizon).", nil, nil)
)

// lookupsCollector exports the watchlists' and the flow history's
// figures at scrape time (either may be nil).
type lookupsCollector struct {
	wl *watchlist.Set
	h  *hostpairs.History
}

func (c lookupsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descWLEntries, descWLSat, descHistNovel, descHistSeen, descHistErr, descHistDisk, descHistUnrec, descHistRAM, descHistGens} {
		ch <- d
	}
}

func (c lookupsCollector) Collect(ch chan<- prometheus.Metric) {
	if c.wl != nil {
		for _, name := range c.wl.Lists() {
			l := c.wl.Get(name)
			ch <- prometheus.MustNewConstMetric(descWLEntries, prometheus.GaugeValue, float64(l.Len()), name)
			ch <- prometheus.MustNewConstMetric(descWLSat, prometheus.GaugeValue, float64(l.Saturations()), name)
		}
	}
	if c.h != nil {
		st := c.h.Stats()
		ch <- prometheus.MustNewConstMetric(descHistNovel, prometheus.CounterValue, float64(st.Novel))
		ch <- prometheus.MustNewConstMetric(descHistSeen, prometheus.CounterValue, float64(st.Seen))
		ch <- prometheus.MustNewConstMetric(descHistErr, prometheus.CounterValue, float64(st.Errors))
		ch <- prometheus.MustNewConstMetric(descHistDisk, prometheus.GaugeValue, float64(st.DiskBytes))
		ch <- prometheus.MustNewConstMetric(descHistUnrec, prometheus.CounterValue, float64(st.Unrecorded))
		ch <- prometheus.MustNewConstMetric(descHistRAM, prometheus.GaugeValue, float64(st.RAMBytes))
		ch <- prometheus.MustNewConstMetric(descHistGens, prometheus.GaugeValue, float64(len(st.Generations)))
	}
}
