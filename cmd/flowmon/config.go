package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"

	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/conferr"
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
	fs := newFlagSet("config", "[--offline] check [FILE]", stderr,
		"\ncheck: parse flowmon run's config FILE strictly, and the rules and alerting files it names; print every",
		"error as file:line:col: key: what is wrong (exit 1), or \"FILE: valid\" and the effective configuration:",
		"every key with its value, the defaults filled, paths made absolute (flowmon run --config reads it back).",
		"It checks this machine too, as flowmon run will: the user exists, the directories it writes in are there",
		"and writable by that user (--offline: the settings only, for a config made for another machine).",
		"With no FILE, print the defaults.")
	offline := fs.Bool("offline", false, "check the settings only, not this machine (the user, the directories)")
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
		return configCheck(file, !*offline, stdout, stderr)
	default:
		return usageError(fs, "unknown subcommand %q (want check)", sub)
	}
}

// configCheck checks file ("" for none: the defaults) and the files it
// names, and with host what it needs of this machine (config.CheckHost),
// printing every error, or the effective configuration.
func configCheck(file string, host bool, stdout, stderr io.Writer) error {
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
	// The web config file is read as the server will read it, and a
	// listen address beyond loopback needs it to set TLS or basic auth.
	refused := 0
	if err := c.CheckWeb(); err != nil {
		fmt.Fprintln(stderr, err)
		if e := (*conferr.Error)(nil); errors.As(err, &e) && e.Key == "web.config-file" {
			bad++
		} else {
			refused++
		}
	}
	if err := c.CheckHost(); host && err != nil {
		// What the agent writes where, as the user it runs as: a start
		// refused now, not a state lost at the stop.
		for _, e := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(stderr, e)
		}
		bad++
	}
	if host && c.Interface != "" {
		// A warning, not an error: a config is often checked before the
		// interface it names is made (a VLAN, a veth, a tap).
		if _, err := net.InterfaceByName(c.Interface); err != nil {
			fmt.Fprintf(stderr, "warning: interface %q is not in this network namespace (yet): flowmon run refuses to start until it is\n", c.Interface)
		}
	}
	if c.Alerting != "" {
		if err := checkAlerting(c.Alerting); err != nil {
			fmt.Fprintln(stderr, err)
			bad++
		}
	}
	if bad > 0 {
		return exitWith(1, fmt.Errorf("%s: %s it names with errors", file, plural(bad, "file")))
	}
	if refused > 0 {
		return exitWith(1, fmt.Errorf("%s: %s", file, plural(refused, "error")))
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
		if err := set.CheckWatchlists(names); err != nil {
			fmt.Fprintln(stderr, err) // a line a rule: "rules.yaml:3:9: rule ..."
			bad++
		}
	}
	return bad
}

// listNames are the names of the configuration's lists, sorted: what
// the rules check against (rules.Watchlists).
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
