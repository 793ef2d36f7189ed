package main

import (
	"io"

	"github.com/flowmon/flowmon/eval/cascadeeval"
	"github.com/flowmon/flowmon/eval/qfeval"
	"github.com/flowmon/flowmon/internal/outfile"
)

func init() {
	evals["qf"] = evaluation{
		summary: "quotient filter: false positives against 1-e^(-α/2^r), and against a Bloom filter in RAM ('Don't thrash', Sections 2-3)",
		run:     runEvalQF,
	}
	evals["cascade"] = evaluation{
		summary: "Cascade Filter against a buffered Bloom filter on this machine's disk, data set past RAM, and its insert latency with the paper's merges and background ones ('Don't thrash', Sections 2-3)",
		run:     runEvalCascade,
	}
}

func runEvalQF(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("eval qf", "[flags]", stderr)
	out := outFlag(fs)
	cfg := qfeval.Defaults
	fs.IntVar(&cfg.Probes, "probes", cfg.Probes, "absent keys looked up per measured rate")
	q := fs.Uint("q", cfg.QuotientBits, "quotient bits of the false-positive table's filters (2^q slots)")
	fs.Uint64Var(&cfg.N, "n", cfg.N, "keys of the throughput table (0 skips it)")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "takes no arguments (have %q)", fs.Args())
	}
	cfg.QuotientBits = *q
	switch {
	case cfg.Probes < 1000:
		return usageError(fs, "-probes %d: must be at least 1000", cfg.Probes)
	case cfg.QuotientBits < 8 || cfg.QuotientBits > 24:
		return usageError(fs, "-q %d: must be from 8 to 24", cfg.QuotientBits)
	case cfg.N != 0 && (cfg.N < 1000 || cfg.N > 1<<30):
		return usageError(fs, "-n %d: must be 0 or from 1000 to 2^30", cfg.N)
	}
	w, err := outfile.Create(*out, stdout)
	if err != nil {
		return err
	}
	defer w.Close()
	if err := qfeval.Run(w, cfg); err != nil {
		return err
	}
	return w.Close()
}

func runEvalCascade(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("eval cascade", "[flags]", stderr)
	out := outFlag(fs)
	cfg := cascadeeval.Defaults
	fs.StringVar(&cfg.Dir, "dir", "", "directory for the run's files, on the disk to measure (default: the temporary directory)")
	sizes := fs.String("sizes", cascadeeval.FormatSizes(cfg.Sizes),
		"runs as RAM:RATIO,...: each structure's RAM budget (bytes, K, M or G) and the Bloom filter's size on disk over it (sets the number of keys)")
	fs.Float64Var(&cfg.FPRate, "fp", cfg.FPRate, "false-positive rate of both structures")
	fs.Float64Var(&cfg.BloomSeconds, "bloom-seconds", cfg.BloomSeconds, "how long the Bloom filter's inserts are measured")
	fs.Float64Var(&cfg.LookupSeconds, "lookup-seconds", cfg.LookupSeconds, "how long each lookup measurement runs")
	fs.IntVar(&cfg.MaxLookups, "max-lookups", cfg.MaxLookups, "most lookups per measurement")
	fs.BoolVar(&cfg.Cached, "cached", false, "let the page cache serve reads (a warm-cache run)")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "takes no arguments (have %q)", fs.Args())
	}
	var err error
	if cfg.Sizes, err = cascadeeval.ParseSizes(*sizes); err != nil {
		return usageError(fs, "-sizes: %v", err)
	}
	for _, s := range cfg.Sizes {
		switch {
		case s.RAMBytes < 64<<10 || s.RAMBytes > 1<<32:
			return usageError(fs, "-sizes: RAM %d must be from 64 KiB to 4 GiB", s.RAMBytes)
		case s.Ratio < 8 || s.Ratio > 1024:
			return usageError(fs, "-sizes: ratio %g must be from 8 to 1024 (the data set must be well past RAM)", s.Ratio)
		}
	}
	switch {
	case !(cfg.FPRate > 0 && cfg.FPRate < 0.5):
		return usageError(fs, "-fp %g: must be above 0 and below 0.5", cfg.FPRate)
	case cfg.BloomSeconds <= 0 || cfg.LookupSeconds <= 0 || cfg.MaxLookups < 100:
		return usageError(fs, "-bloom-seconds and -lookup-seconds must be > 0, -max-lookups at least 100")
	}
	w, err := outfile.Create(*out, stdout)
	if err != nil {
		return err
	}
	defer w.Close()
	if err := cascadeeval.Run(w, cfg); err != nil {
		return err
	}
	return w.Close()
}
