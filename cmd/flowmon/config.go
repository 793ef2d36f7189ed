package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strings"

	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/pipeline/watchlist"
	"github.com/flowmon/flowmon/rules"
)

func init() {
	commands["config"] = command{
		summary: "check flowmon run's config file and print the configuration it gives (config check [FILE])",
		run:     runConfig,
	}
}

func runConfig(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("config", "check [FILE]", stderr,
		"\ncheck: parse flowmon run's config FILE strictly, and the rules and alerting files it names; print every",
		"error as file:line:col: key: what is wrong (exit 1), or \"FILE: valid\" and the effective configuration:",
		"every key with its value, the defaults filled, paths made absolute (flowmon run --config reads it back).",
		"With no FILE, print the defaults.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return usageError(fs, "want a subcommand: check")
	}
	switch sub, files := rest[0], rest[1:]; sub {
	case "check":
		if len(files) > 1 {
			return usageError(fs, "check takes one config file, not %d", len(files))
		}
		file := ""
		if len(files) == 1 {
			file = files[0]
		}
		return configCheck(file, stdout, stderr)
	default:
		return usageError(fs, "unknown subcommand %q (want check)", sub)
	}
}

// configCheck checks file ("" for none: the defaults) and the files it
// names, printing every error, or the effective configuration.
func configCheck(file string, stdout, stderr io.Writer) error {
	c, err := config.Load(file)
	if errors.Is(err, config.ErrInvalid) {
		fmt.Fprintln(stderr, err)
		return exitWith(1, fmt.Errorf("%s: %s", file, plural(countErrors(err), "error")))
	}
	if err != nil {
		return err
	}
	// The rules and sinks files are the agent's to load; a broken one
	// would stop it at start, so it is an error of the configuration.
	bad := 0
	var set *rules.Set
	switch c.Rules {
	case config.RulesNone:
	case "":
		set, err = rules.Default()
	default:
		set, err = rules.Load(c.Rules)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		bad++
	}
	bad += checkWatchlists(c, set, stderr)
	if c.Alerting != "" {
		if err := checkAlerting(c.Alerting); err != nil {
			fmt.Fprintln(stderr, err)
			bad++
		}
	}
	if bad > 0 {
		return exitWith(1, fmt.Errorf("%s: %s it names with errors", file, plural(bad, "file")))
	}
	out, err := c.Effective()
	if err != nil {
		return err
	}
	if file != "" {
		fmt.Fprintf(stdout, "%s: valid\n", file)
	}
	_, err = stdout.Write(out)
	return err
}

// checkWatchlists reads each list's file as the agent will at start (a
// file it cannot read stops it; the lines it would skip are said too),
// and checks that the rules name only lists the configuration gives. It
// returns how many of these are wrong.
func checkWatchlists(c config.Config, set *rules.Set, stderr io.Writer) int {
	bad := 0
	for _, w := range c.Watchlists.Lists {
		data, err := os.ReadFile(w.File)
		if err != nil {
			fmt.Fprintf(stderr, "watchlist %s: %v\n", w.Name, err)
			bad++
			continue
		}
		_, lineErrs := watchlist.Parse(w.File, bytes.NewReader(data))
		for _, e := range lineErrs {
			fmt.Fprintf(stderr, "watchlist %s: the agent skips %v\n", w.Name, e)
		}
	}
	names := make(listNames, len(c.Watchlists.Lists))
	for i, w := range c.Watchlists.Lists {
		names[i] = w.Name
	}
	slices.Sort(names)
	switch {
	case set == nil && len(names) > 0:
		fmt.Fprintln(stderr, "watchlists do nothing without rules (rules: none)")
		bad++
	case set != nil:
		err := rules.NewEngine(set, alerts.NewManager(alerts.ManagerOptions{})).SetLookups(names)
		if err != nil {
			where := c.Rules
			if where == "" {
				where = "the embedded rules"
			}
			for _, line := range strings.Split(err.Error(), "\n") { // one a rule: "3:9: rule ..."
				fmt.Fprintf(stderr, "%s:%s\n", where, line)
			}
			bad++
		}
	}
	return bad
}

// listNames are the names of the configuration's lists, sorted: what
// the rules check against (rules.Lookups).
type listNames []string

func (l listNames) Lists() []string              { return l }
func (listNames) Listed(string, netip.Addr) bool { return false }

// checkAlerting parses an alert sinks file as the agent will.
func checkAlerting(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read alerting config: %w", err)
	}
	_, err = alerts.ParseConfig(path, data)
	return err
}

// countErrors is how many errors err joins (errors.Join), 1 if it joins
// none.
func countErrors(err error) int {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return len(j.Unwrap())
	}
	return 1
}

// setLookupFlags applies run's watchlist and history flags over the
// config file's keys, as loadRunConfig does the others: each --watchlist
// NAME=FILE sets NAME's file (or adds the list), --watchlist-dir and
// --history-dir, --history-horizon and --history-ram their keys.
func setLookupFlags(c *config.Config, f *runFlags) error {
	for _, w := range f.watchlists {
		if err := c.Set("watchlist", w); err != nil {
			return err
		}
	}
	for _, o := range [][2]string{{"watchlist-dir", f.wlDir}, {"history-dir", f.historyDir},
		{"history-horizon", f.historyHorizon}, {"history-ram", f.historyRAM}} {
		if o[1] == "" {
			continue
		}
		if err := c.Set(o[0], o[1]); err != nil {
			return err
		}
	}
	return nil
}

// watchlistSpecs are the config's lists, as watchlist.Set.Update takes them.
func watchlistSpecs(lists []config.Watchlist) []watchlist.Spec {
	specs := make([]watchlist.Spec, len(lists))
	for i, w := range lists {
		specs[i] = watchlist.Spec{Name: w.Name, File: w.File}
	}
	return specs
}

// asWatchlistFlags are the config's lists as --watchlist NAME=FILE flags
// (a name holds no '=': watchlist.CheckName).
func asWatchlistFlags(lists []config.Watchlist) watchlistFlags {
	var out watchlistFlags
	for _, w := range lists {
		out = append(out, w.Name+"="+w.File)
	}
	return out
}

// configReloader reads the config file again at each call (SIGHUP), and
// the watchlists' files: a new rules file is loaded (the rules' own
// watcher reloads an unchanged path's contents at the same SIGHUP), the
// watchlists become the file's (wl.Update: lists added are opened, a
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
func configReloader(f *runFlags, running config.Config, al *alerting, wl *watchlist.Set, stderr io.Writer) func() error {
	var accept func(*watchlist.Set) error
	if al != nil {
		accept = func(next *watchlist.Set) error { return al.eng.SetLookups(next) }
	}
	open := func(s watchlist.Spec) (*watchlist.List, error) {
		return openWatchlist(s, running.Watchlists.Dir, stderr)
	}
	update := func(lists []config.Watchlist) error {
		err := wl.Update(watchlistSpecs(lists), open, accept)
		if al != nil {
			// accept gave the rules the set as it would be; the running
			// one holds the same lists.
			err = errors.Join(err, al.eng.SetLookups(wl))
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
		switch {
		case running.Rules != from:
			errs = append(errs, switchRules(al, from, running.Rules))
		case (added || len(removed) > 0) && al != nil && running.Rules != "" && running.Rules != config.RulesNone:
			errs = append(errs, al.reload("SIGHUP, the config's watchlists"))
		}
		return append(errs, update(running.Watchlists.Lists))
	}
	return func() error {
		from := running.Rules
		next, err := loadRunConfig(f)
		if err == nil && al == nil && len(next.Watchlists.Lists) > 0 {
			err = errors.New("watchlists do nothing without rules (rules: none)")
		}
		if err != nil {
			err = fmt.Errorf("%s not reloaded, the running configuration stays:\n%w", f.configFile, err)
		} else if _, err = running.Reloadable(next); err != nil {
			err = fmt.Errorf("%s: %w", f.configFile, err)
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
