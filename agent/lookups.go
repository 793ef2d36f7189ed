package agent

import (
	"errors"
	"fmt"
	"log/slog"
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
func openWatchlists(specs []config.Watchlist, dir string, log *slog.Logger) (*watchlist.Set, error) {
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
func openWatchlist(spec watchlist.Spec, dir string, log *slog.Logger) (*watchlist.List, error) {
	log = orDiscard(log)
	state := ""
	if dir != "" {
		state = filepath.Join(dir, spec.Name+".wl")
	}
	l, opened, lineErrs, err := watchlist.Open(spec.Name, spec.File, state, watchlist.DefaultOptions)
	for _, e := range lineErrs {
		log.Warn("watchlist line skipped", "watchlist", spec.Name, "err", e)
	}
	if err != nil {
		return nil, err
	}
	if opened != "" {
		log.Info("watchlist opened", "watchlist", spec.Name, "how", opened, "entries", l.Len())
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
	if err := al.eng.CheckWatchlists(set); err != nil {
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
// history (in h.Dir when set), checks that the rules name only lists
// there are, and gives both to the pipeline cfg, which hands them to its
// consumers (pipeline.Lookups).
func openLookups(lists []config.Watchlist, wlDir string, h config.History, al *alerting, cfg *pipeline.Config, log *slog.Logger) (*lookups, error) {
	wl, err := openWatchlists(lists, wlDir, log)
	if err != nil {
		return nil, err
	}
	lk := &lookups{wl: wl}
	cfg.Watchlists = wl
	if err := useWatchlists(al, wl); err != nil {
		lk.close()
		return nil, err
	}
	if h.Dir != "" {
		if lk.hist, err = hostpairs.Open(h.Dir, historyOptions(h)); err != nil {
			lk.close()
			return nil, err
		}
		cfg.HostPairs = lk.hist
	}
	return lk, nil
}

// register registers the lists' and the history's metrics on reg.
func (lk *lookups) register(reg prometheus.Registerer) error {
	if err := lk.wl.Register(reg); err != nil {
		return err
	}
	if lk.hist != nil {
		return lk.hist.Register(reg)
	}
	return nil
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
