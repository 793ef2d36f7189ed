package main

import (
	"io"
	"os"

	"github.com/flowmon/flowmon/eval/ruleseval"
	"github.com/flowmon/flowmon/internal/outfile"
)

func init() {
	evals["rules"] = evaluation{
		summary: "the default detection rules: recall per gen scenario, false alarms on benign traffic, alerts on real captures",
		run:     runEvalRules,
	}
}

func runEvalRules(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("eval rules", "[flags]", stderr)
	out := outFlag(fs)
	var cfg ruleseval.Config
	fs.IntVar(&cfg.Flows, "flows", 100_000, "flows per generated trace")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "random seed of the first trace (each trace adds one)")
	fs.StringVar(&cfg.Captures, "captures", "", "also run the rules over every capture listed in `DIR`/MANIFEST.tsv (../shared/pcaps/real)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "takes no arguments (have %q)", fs.Args())
	}
	if cfg.Flows < 1000 {
		return usageError(fs, "-flows %d: must be at least 1000", cfg.Flows)
	}
	if cfg.Captures != "" {
		if _, err := os.Stat(cfg.Captures); err != nil {
			return usageError(fs, "-captures: %v", err)
		}
	}
	w, err := outfile.Create(*out, stdout)
	if err != nil {
		return err
	}
	defer w.Close()
	if err := ruleseval.Run(w, cfg); err != nil {
		return err
	}
	return w.Close()
}
