package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/flowmon/flowmon/filters/ccf/ccfeval"
)

func init() {
	evals["ccf"] = evaluation{
		summary: "counting cuckoo filter vs counting Bloom filter multiset synchronization (CCF paper, Section 6)",
		run:     runEvalCCF,
	}
}

func runEvalCCF(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval ccf", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg ccfeval.Config
	fs.IntVar(&cfg.N, "n", 64000, "distinct elements per host")
	fs.Float64Var(&cfg.OnlyFrac, "only", 0.1, "share of each root set on one host only")
	fs.Float64Var(&cfg.DiffFrac, "diff", 0.1, "share of shared elements with different multiplicities")
	bpe := fs.String("bpe", "16,24,32,40,48,56,64,72,80", "bits per element, comma separated")
	fs.IntVar(&cfg.Trials, "trials", 1, "workloads averaged per row")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	fs.IntVar(&cfg.OccFrom, "occ-from", 10, "occupancy runs from 2^occ-from buckets")
	fs.IntVar(&cfg.OccTo, "occ-to", 16, "occupancy runs up to 2^occ-to buckets")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	for _, s := range strings.Split(*bpe, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < 8 || v > 1024 {
			fmt.Fprintf(stderr, "eval ccf: bad -bpe value %q\n", s)
			return errUsage
		}
		cfg.BPE = append(cfg.BPE, v)
	}
	if cfg.N < 100 || cfg.Trials < 1 || cfg.OccFrom < 1 || cfg.OccTo > 24 || cfg.OccFrom > cfg.OccTo ||
		!(cfg.OnlyFrac > 0 && cfg.OnlyFrac < 1) || !(cfg.DiffFrac > 0 && cfg.DiffFrac <= 1) {
		fmt.Fprintln(stderr, "eval ccf: need n >= 100, trials >= 1, 1 <= occ-from <= occ-to <= 24, 0 < only < 1, 0 < diff <= 1")
		return errUsage
	}
	return ccfeval.Run(cfg, stdout)
}
