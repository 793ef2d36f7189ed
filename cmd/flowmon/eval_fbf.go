package main

import (
	"io"

	"github.com/flowmon/flowmon/eval/dedupeval"
	"github.com/flowmon/flowmon/eval/fbfeval"
	"github.com/flowmon/flowmon/internal/outfile"
)

func init() {
	evals["fbf"] = evaluation{
		summary: "Forgetful Bloom Filter (FBF paper, Section VI-A to VI-C) and the dedup stage on a synthetic stream",
		run:     runEvalFBF,
	}
}

func runEvalFBF(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("eval fbf", "[flags]", stderr)
	out := outFlag(fs)
	var cfg fbfeval.Config
	fs.IntVar(&cfg.Trials, "trials", 200_000, "absent elements probed per measurement")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	noDedup := fs.Bool("no-dedup", false, "skip the dedup stage table")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "takes no arguments (have %q)", fs.Args())
	}
	if cfg.Trials < 1000 {
		return usageError(fs, "-trials %d: must be at least 1000", cfg.Trials)
	}
	w, err := outfile.Create(*out, stdout)
	if err != nil {
		return err
	}
	defer w.Close()
	if err := fbfeval.Run(w, cfg); err != nil {
		return err
	}
	if !*noDedup {
		if err := dedupeval.Eval(w, cfg.Seed); err != nil {
			return err
		}
	}
	return w.Close()
}
