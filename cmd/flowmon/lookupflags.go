package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/internal/yamlnode"
	"github.com/flowmon/flowmon/pipeline/watchlist"
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

// lists are the lists given, as the agent's configuration names them.
func (w watchlistFlags) lists() []config.Watchlist {
	var out []config.Watchlist
	for _, spec := range w {
		name, file, _ := strings.Cut(spec, "=")
		out = append(out, config.Watchlist{Name: name, File: file})
	}
	return out
}

const watchlistUsage = "watchlist `NAME=FILE` for watchlist rules (one address or CIDR prefix a line, # comments); repeat for more lists"

const (
	historyUsage        = "keep the flow history (every host pair seen, for novelty rules) in `DIR`: Cascade Filters of 16 MiB of RAM (--history-ram) that persist across runs"
	historyHorizonUsage = "with --history-dir: forget a host pair this `DURATION` of packet time after it was last seen (at most a quarter later), so that novelty rules fire on it again (0: remember for ever)"
	historyRAMUsage     = "with --history-dir: the history's RAM in `BYTES` (16MiB when not given; a unit: 64MiB, 500MB), its newest filter's two QF0s (twice that for a moment after each generation ends)"
)

// historyFlags sets h from --history-dir, --history-horizon and
// --history-ram (replay's; run sets its config's keys from them).
func historyFlags(fs *flag.FlagSet, h *config.History) {
	fs.StringVar(&h.Dir, "history-dir", "", historyUsage)
	fs.DurationVar(&h.Horizon, "history-horizon", 0, historyHorizonUsage)
	fs.Func("history-ram", historyRAMUsage, func(v string) error {
		n, err := yamlnode.ParseSize(v)
		if err != nil {
			return err
		}
		h.RAM = int(n)
		return nil
	})
}
