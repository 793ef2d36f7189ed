package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/flowmon/flowmon/rules"
)

func init() {
	commands["rules"] = command{
		summary: "check rules files, test them on traces (rules check|test|show)",
		run:     runRules,
	}
}

func runRules(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("rules", "check FILE... | test FILE... | show", stderr,
		"\ncheck: parse and compile rules files; print every error as file:line:col: rule NAME: what (exit 1), or one line per valid file.",
		"test: run rule tests (YAML: a pcap or a flowmon gen recipe, a rules file, the alerts expected) and print each difference (exit 1).",
		"show: print the embedded default rules.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return usageError(fs, "want a subcommand: check, test or show")
	}
	switch sub, files := rest[0], rest[1:]; sub {
	case "show":
		if len(files) > 0 {
			return usageError(fs, "show takes no argument")
		}
		_, err := stdout.Write(rules.DefaultRules())
		return err
	case "check":
		if len(files) == 0 {
			return usageError(fs, "check: no rules file given")
		}
		return rulesCheck(files, stdout, stderr)
	case "test":
		if len(files) == 0 {
			return usageError(fs, "test: no test file given")
		}
		return rulesTest(files, stdout, stderr)
	default:
		return usageError(fs, "unknown subcommand %q (want check, test or show)", sub)
	}
}

// rulesCheck checks each file, reporting every error of each.
func rulesCheck(files []string, stdout, stderr io.Writer) error {
	bad := 0
	for _, f := range files {
		s, err := rules.Load(f)
		if err != nil {
			bad++
			fmt.Fprintln(stderr, err)
			continue
		}
		fmt.Fprintf(stdout, "%s: %d rules, valid\n", f, s.Len())
	}
	if bad > 0 {
		return exitWith(1, errors.New(plural(bad, "file")+" with errors"))
	}
	return nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
