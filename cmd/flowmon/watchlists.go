package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/internal/yamlnode"
	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/pipeline/hostpairs"
	"github.com/flowmon/flowmon/pipeline/watchlist"
	"github.com/flowmon/flowmon/record"
	"github.com/flowmon/flowmon/record/connlog"
)

// watchlistFlags is --watchlist NAME=FILE, given once per list.
type watchlistFlags []string

func (w *watchlistFlags) String() string { return strings.Join(*w, " ") }

func (w *watchlistFlags) Set(v string) error {
	name, file, ok := strings.Cut(v, "=")
	if !ok || file == "" {
		return fmt.Errorf("want NAME=FILE, got %q", v)
	}
	if err := watchlist.CheckName(name); err != nil {
		return err
	}
	for _, given := range *w {
		if n, _, _ := strings.Cut(given, "="); n == name {
			return fmt.Errorf("watchlist %q given twice", name)
		}
	}
	*w = append(*w, v)
	return nil
}

const watchlistUsage = "watchlist `NAME=FILE` for watchlist rules (one address or CIDR prefix a line, # comments); repeat for more lists"

// openWatchlists opens the lists; with dir, each list's filter persists
// in dir/NAME.wl (reopened at the next start without rebuilding), else
// it lives in memory. Bad lines are reported on stderr and skipped.
func openWatchlists(specs watchlistFlags, dir string, stderr io.Writer) (*watchlist.Set, error) {
	var lists []*watchlist.List
	closeAll := func() {
		for _, l := range lists {
			l.Close()
		}
	}
	for _, spec := range specs {
		name, file, _ := strings.Cut(spec, "=")
		l, err := openWatchlist(watchlist.Spec{Name: name, File: file}, dir, stderr)
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
func openWatchlist(spec watchlist.Spec, dir string, stderr io.Writer) (*watchlist.List, error) {
	state := ""
	if dir != "" {
		state = filepath.Join(dir, spec.Name+".wl")
	}
	l, opened, lineErrs, err := watchlist.Open(spec.Name, spec.File, state, watchlist.DefaultOptions)
	for _, e := range lineErrs {
		fmt.Fprintf(stderr, "flowmon: watchlist %s: skipped %v\n", spec.Name, e)
	}
	if err != nil {
		return nil, err
	}
	if opened != "" {
		fmt.Fprintf(stderr, "flowmon: watchlist %s: %s (%d entries)\n", spec.Name, opened, l.Len())
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

const (
	historyUsage        = "keep the flow history (every host pair seen, for novelty rules) in `DIR`: Cascade Filters of 16 MiB of RAM (--history-ram) that persist across runs"
	historyHorizonUsage = "with --history-dir: forget a host pair this `DURATION` of packet time after it was last seen (at most a quarter later), so that novelty rules fire on it again (0: remember for ever)"
	historyRAMUsage     = "with --history-dir: the history's RAM in `BYTES` (16MiB when not given; a unit: 64MiB, 500MB), its newest filter's two QF0s (twice that for a moment after each generation ends)"
)

// historySpec is the flow history that replay's flags, or run's config,
// ask for.
type historySpec struct {
	dir     string // "" for none
	horizon time.Duration
	ram     uint64 // 0: hostpairs.DefaultOptions'
}

// flags sets s from --history-dir, --history-horizon and --history-ram.
func (s *historySpec) flags(fs *flag.FlagSet) {
	fs.StringVar(&s.dir, "history-dir", "", historyUsage)
	fs.DurationVar(&s.horizon, "history-horizon", 0, historyHorizonUsage)
	fs.Func("history-ram", historyRAMUsage, func(v string) error {
		n, err := yamlnode.ParseSize(v)
		if err != nil {
			return err
		}
		s.ram = uint64(n)
		return nil
	})
}

func (s historySpec) options() hostpairs.Options {
	o := hostpairs.DefaultOptions
	o.Horizon = s.horizon
	if s.ram != 0 {
		o.RAMBytes = s.ram
	}
	return o
}

// lookups are what the rules ask beside the packets: the watchlists and
// the flow history, as replay and run open them from their flags.
type lookups struct {
	wl   *watchlist.Set
	hist *hostpairs.History // nil without a history directory
}

// openLookups opens the watchlists (persisted in wlDir when set) and the
// history (in hs.dir when set), gives the lists to the rules and the
// history to the pipeline cfg.
func openLookups(lists watchlistFlags, wlDir string, hs historySpec, al *alerting, cfg *pipeline.Config, stderr io.Writer) (*lookups, error) {
	wl, err := openWatchlists(lists, wlDir, stderr)
	if err != nil {
		return nil, err
	}
	lk := &lookups{wl: wl}
	if err := useWatchlists(al, wl); err != nil {
		lk.close()
		return nil, err
	}
	if hs.dir != "" {
		if lk.hist, err = hostpairs.Open(hs.dir, hs.options()); err != nil {
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

// openFlowLog opens the flow log name (- for stdout; "" for none), a
// conn.log JSON lines sink in cfg whose failures are logged to stderr, and
// returns what closes it.
func openFlowLog(name string, stdout, stderr io.Writer, cfg *pipeline.Config) (func() error, error) {
	if name == "" {
		return func() error { return nil }, nil
	}
	out, err := createOutput(name, stdout)
	if err != nil {
		return nil, err
	}
	cfg.Sinks = append(cfg.Sinks, record.Named{Name: "connlog", Sink: connlog.NewWriter(out)})
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	return out.Close, nil
}

// closeInto runs close and keeps its error in *rerr unless one is there.
func closeInto(close func() error, rerr *error) {
	if err := close(); err != nil && *rerr == nil {
		*rerr = err
	}
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
