package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/flowmon/flowmon/internal/history"
	"github.com/flowmon/flowmon/internal/watchlist"
)

// watchlistFlags is --watchlist NAME=FILE, given once per list.
type watchlistFlags []string

func (w *watchlistFlags) String() string { return strings.Join(*w, " ") }

func (w *watchlistFlags) Set(v string) error {
	name, file, ok := strings.Cut(v, "=")
	if !ok || name == "" || file == "" {
		return fmt.Errorf("want NAME=FILE, got %q", v)
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
		state := ""
		if dir != "" {
			state = filepath.Join(dir, name+".wl")
		}
		l, opened, lineErrs, err := watchlist.Open(name, file, state, watchlist.DefaultOptions)
		for _, e := range lineErrs {
			fmt.Fprintf(stderr, "flowmon: watchlist %s: skipped %v\n", name, e)
		}
		if err != nil {
			closeAll()
			return nil, err
		}
		if opened != "" {
			fmt.Fprintf(stderr, "flowmon: watchlist %s: %s (%d entries)\n", name, opened, l.Len())
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

// useWatchlists gives the rules their lists: a rule naming a list not
// given is an error.
func useWatchlists(al *alerting, set *watchlist.Set) error {
	if al == nil {
		if len(set.Lists()) > 0 {
			return errors.New("--watchlist does nothing without rules (--rules none)")
		}
		return nil
	}
	if err := al.eng.SetLookups(set); err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	return nil
}

const historyUsage = "keep the flow history (every host pair seen, for novelty rules) in `DIR`, a Cascade Filter of 16 MB of RAM that persists across runs"

// closeHistory closes h into *rerr (the first error wins).
func closeHistory(h *history.History, rerr *error) {
	if err := h.Close(); err != nil && *rerr == nil {
		*rerr = fmt.Errorf("flow history: %w", err)
	}
}
