package main

import (
	"io"

	"github.com/flowmon/flowmon/eval/scbfeval"
	"github.com/flowmon/flowmon/internal/outfile"
)

func init() {
	evals["scbf"] = evaluation{
		summary: "scaling counting Bloom filter (dablooms): the tightening ratio's rate, memory and sub-filters at 1x, 10x, 100x capacity",
		run:     runEvalSCBF,
	}
}

func runEvalSCBF(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("eval scbf", "[flags]", stderr)
	out := outFlag(fs)
	var cfg scbfeval.Config
	fs.Uint64Var(&cfg.Capacity, "capacity", 10_000, "elements per sub-filter")
	fs.Float64Var(&cfg.ErrorRate, "rate", 0.01, "configured overall false-positive rate P")
	fs.IntVar(&cfg.Trials, "trials", 1_000_000, "absent keys probed per measurement")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usageError(fs, "takes no arguments (have %q)", fs.Args())
	case cfg.Capacity < 100 || cfg.Capacity > 1_000_000:
		return usageError(fs, "-capacity %d: must be from 100 to 1000000 (the run adds 100 times as many)", cfg.Capacity)
	case !(cfg.ErrorRate >= 1e-6 && cfg.ErrorRate <= 0.1):
		return usageError(fs, "-rate %v: must be from 1e-06 to 0.1", cfg.ErrorRate)
	case cfg.Trials < 1000:
		return usageError(fs, "-trials %d: must be at least 1000", cfg.Trials)
	}
	w, err := outfile.Create(*out, stdout)
	if err != nil {
		return err
	}
	defer w.Close()
	if err := scbfeval.Run(w, cfg); err != nil {
		return err
	}
	return w.Close()
}
