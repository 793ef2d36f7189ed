package main

import (
	"io"
	"strconv"
	"strings"

	"github.com/flowmon/flowmon/eval/ccfeval"
	"github.com/flowmon/flowmon/internal/outfile"
)

func init() {
	evals["ccf"] = evaluation{
		summary: "counting cuckoo filter vs counting Bloom filter multiset synchronization (CCF paper, Section 6)",
		run:     runEvalCCF,
	}
}

func runEvalCCF(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("eval ccf", "[flags]", stderr)
	out := outFlag(fs)
	var cfg ccfeval.Config
	fs.IntVar(&cfg.N, "n", 64000, "distinct elements per host")
	fs.Float64Var(&cfg.OnlyFrac, "only", 0.1, "share of each root set on one host only")
	fs.Float64Var(&cfg.DiffFrac, "diff", 0.1, "share of shared elements with different multiplicities")
	bpe := fs.String("bpe", "16,24,32,40,48,56,64,72,80", "bits per element, comma separated")
	fs.IntVar(&cfg.Trials, "trials", 1, "workloads averaged per row")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	fs.IntVar(&cfg.OccFrom, "occ-from", 10, "occupancy runs from 2^occ-from buckets")
	fs.IntVar(&cfg.OccTo, "occ-to", 16, "occupancy runs up to 2^occ-to buckets")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "takes no arguments (have %q)", fs.Args())
	}
	for _, s := range strings.Split(*bpe, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < 8 || v > 1024 {
			return usageError(fs, "-bpe %q: each value must be a whole number of bits from 8 to 1024", s)
		}
		cfg.BPE = append(cfg.BPE, v)
	}
	switch {
	case cfg.N < 100:
		return usageError(fs, "-n %d: must be at least 100", cfg.N)
	case cfg.Trials < 1:
		return usageError(fs, "-trials %d: must be at least 1", cfg.Trials)
	case cfg.OccFrom < 1 || cfg.OccTo > 24 || cfg.OccFrom > cfg.OccTo:
		return usageError(fs, "-occ-from %d -occ-to %d: need 1 <= occ-from <= occ-to <= 24", cfg.OccFrom, cfg.OccTo)
	case !(cfg.OnlyFrac > 0 && cfg.OnlyFrac < 1):
		return usageError(fs, "-only %g: must be above 0 and below 1", cfg.OnlyFrac)
	case !(cfg.DiffFrac > 0 && cfg.DiffFrac <= 1):
		return usageError(fs, "-diff %g: must be above 0 and at most 1", cfg.DiffFrac)
	}
	w, err := outfile.Create(*out, stdout)
	if err != nil {
		return err
	}
	defer w.Close()
	if err := ccfeval.Run(cfg, w); err != nil {
		return err
	}
	return w.Close()
}
