package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/flowmon/flowmon/filters/fbf"
	"github.com/flowmon/flowmon/internal/dedup"
)

func init() {
	evals["fbf"] = evaluation{
		summary: "Forgetful Bloom Filter (FBF paper, Section VI-A to VI-C) and the dedup stage on a synthetic stream",
		run:     runEvalFBF,
	}
}

func runEvalFBF(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval fbf", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg fbf.EvalConfig
	fs.IntVar(&cfg.Trials, "trials", 200_000, "absent elements probed per measurement")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	noDedup := fs.Bool("no-dedup", false, "skip the dedup stage table")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if cfg.Trials < 1000 || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "eval fbf: need -trials >= 1000 and no arguments")
		return errUsage
	}
	if err := fbf.Eval(stdout, cfg); err != nil {
		return err
	}
	if *noDedup {
		return nil
	}
	return dedup.Eval(stdout, cfg.Seed)
}
