package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/pipeline/watchlist"
)

// reloadOnHUP runs reload at each SIGHUP until ctx is done, on its own
// goroutine, saying what went wrong. It asks for SIGHUP before it
// returns, so that a SIGHUP sent once the agent says it is capturing is
// not missed (asked for on the goroutine, it could come first).
func reloadOnHUP(ctx context.Context, what string, reload func() error, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if err := reload(); err != nil {
					log.Error("SIGHUP: reload failed", "what", what, "err", err)
				} else {
					log.Info("SIGHUP: reloaded", "what", what)
				}
			}
		}
	}()
}

// watchlistSpecs are the config's lists, as watchlist.Set.Update takes them.
func watchlistSpecs(lists []config.Watchlist) []watchlist.Spec {
	specs := make([]watchlist.Spec, len(lists))
	for i, w := range lists {
		specs[i] = watchlist.Spec{Name: w.Name, File: w.File}
	}
	return specs
}

// configReloader reads the config file again at each call (SIGHUP;
// load reads it as the running configuration was read, the flags over
// it), and the watchlists' files: a new rules file is loaded (the rules'
// own watcher reloads an unchanged path's contents at the same SIGHUP),
// the watchlists become the file's (wl.Update: lists added are opened, a
// list whose file changed reads the new one, lists removed are closed);
// a change to any other setting is an error naming it, and the running
// configuration stays whole, its watchlists' files reread.
//
// Lists are added before the rules change and removed after, so that a
// rule and the list it names can come, or go, at one SIGHUP; when the
// lists' names change the rules file is reloaded here too, since the
// rules' own reload at this SIGHUP may run before a list a new rule
// names is open (and be refused), or after a list an old rule names is
// to close. A list a rule still names stays, with the rest of the change
// (the error says which rule), until a SIGHUP finds the rule gone.
func configReloader(file string, load func() (config.Config, error), running config.Config, al *alerting, wl *watchlist.Set, log *slog.Logger) func() error {
	var accept func(*watchlist.Set) error
	if al != nil {
		accept = func(next *watchlist.Set) error { return al.eng.CheckWatchlists(next) }
	}
	open := func(s watchlist.Spec) (*watchlist.List, error) {
		return openWatchlist(s, running.Watchlists.Dir, log)
	}
	update := func(lists []config.Watchlist) error {
		err := wl.Update(watchlistSpecs(lists), open, accept)
		if al != nil {
			// accept checked the rules against the set as it would be;
			// the running one, which the rules ask, holds the same lists.
			err = errors.Join(err, al.eng.CheckWatchlists(wl))
		}
		if err != nil {
			return fmt.Errorf("watchlists: %w", err)
		}
		return nil
	}
	// lists makes the set the running configuration's lists, and the
	// rules the running ones, which were from's.
	lists := func(from string) []error {
		added, removed := listChanges(wl, running.Watchlists.Lists)
		var errs []error
		if added {
			// The new lists, and the removed ones for now.
			errs = append(errs, update(append(slices.Clone(running.Watchlists.Lists), removed...)))
		}
		// The rules file is read again at every SIGHUP, here rather than
		// by the rules' own watcher, so that what the reload says covers
		// the rules too.
		switch {
		case running.Rules != from:
			errs = append(errs, switchRules(al, from, running.Rules))
		case al != nil && running.Rules != "" && running.Rules != config.RulesNone:
			errs = append(errs, al.reload("SIGHUP"))
		}
		return append(errs, update(running.Watchlists.Lists))
	}
	return func() error {
		from := running.Rules
		next, err := load()
		if err == nil && al == nil && len(next.Watchlists.Lists) > 0 {
			err = errors.New("watchlists do nothing without rules (rules: none)")
		}
		if err != nil {
			err = fmt.Errorf("%s not reloaded, the running configuration stays:\n%w", file, err)
		} else if _, err = running.Reloadable(next); err != nil {
			err = fmt.Errorf("%s: %w", file, err)
		}
		return errors.Join(append([]error{err}, lists(from)...)...)
	}
}

// switchRules takes the config's new rules path.
func switchRules(al *alerting, from, to string) error {
	if al == nil || to == config.RulesNone || to == "" {
		return fmt.Errorf("rules changed from %q to %q: turning rules on or off, or back to the embedded ones, takes a restart", from, to)
	}
	return al.switchTo(to, "SIGHUP, the config's rules")
}

// listChanges says whether lists has a name the set has not, and
// returns the set's lists whose names lists has not. (The set, not the
// running configuration: a change the config took that the set refused,
// a list a rule named, is made at a later SIGHUP.)
func listChanges(have *watchlist.Set, lists []config.Watchlist) (added bool, removed []config.Watchlist) {
	for _, w := range lists {
		added = added || have.Get(w.Name) == nil
	}
	for _, name := range have.Lists() {
		if !slices.ContainsFunc(lists, func(w config.Watchlist) bool { return w.Name == name }) {
			removed = append(removed, config.Watchlist{Name: name, File: have.Get(name).File})
		}
	}
	return added, removed
}

// reloads keeps the outcome of the config file's (or the watchlists')
// reloads at SIGHUP for the metrics, as Prometheus keeps its own:
// whether the last one took, when one last did, and how many failed.
type reloads struct {
	ok       atomic.Bool
	okAt     atomic.Int64 // Unix seconds of the last reload that took (or the start)
	failures atomic.Uint64
}

func newReloads() *reloads {
	r := &reloads{}
	r.ok.Store(true)
	r.okAt.Store(time.Now().Unix())
	return r
}

// wrap returns reload recording its outcomes in r.
func (r *reloads) wrap(reload func() error) func() error {
	return func() error {
		err := reload()
		r.ok.Store(err == nil)
		if err != nil {
			r.failures.Add(1)
		} else {
			r.okAt.Store(time.Now().Unix())
		}
		return err
	}
}

var (
	descReloadOK     = prometheus.NewDesc("flowmon_config_last_reload_successful", "Whether the last reload of the config file (or the watchlists' files) at SIGHUP took: 1, or 0 while the running configuration stays the one before.", nil, nil)
	descReloadOKAt   = prometheus.NewDesc("flowmon_config_last_reload_success_timestamp_seconds", "When the config was last loaded or reloaded whole (Unix seconds).", nil, nil)
	descReloadFailed = prometheus.NewDesc("flowmon_config_reload_failures_total", "Reloads at SIGHUP that did not take.", nil, nil)
)

func (r *reloads) Describe(ch chan<- *prometheus.Desc) {
	ch <- descReloadOK
	ch <- descReloadOKAt
	ch <- descReloadFailed
}

func (r *reloads) Collect(ch chan<- prometheus.Metric) {
	ok := 0.0
	if r.ok.Load() {
		ok = 1
	}
	ch <- prometheus.MustNewConstMetric(descReloadOK, prometheus.GaugeValue, ok)
	ch <- prometheus.MustNewConstMetric(descReloadOKAt, prometheus.GaugeValue, float64(r.okAt.Load()))
	ch <- prometheus.MustNewConstMetric(descReloadFailed, prometheus.CounterValue, float64(r.failures.Load()))
}
