package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/internal/config"
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
	if c.Rules != "" && c.Rules != config.RulesNone {
		if _, err := rules.Load(c.Rules); err != nil {
			fmt.Fprintln(stderr, err)
			bad++
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
