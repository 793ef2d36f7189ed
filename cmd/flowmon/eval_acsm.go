package main

import (
	"io"
	"strconv"
	"strings"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/eval/acsmeval"
	"github.com/flowmon/flowmon/internal/outfile"
)

func init() {
	evals["acsm"] = evaluation{
		summary: "kbf vs sbf vs fcf as approximate concurrent state machines on a trace (kBF paper, Section VI)",
		run:     runEvalACSM,
	}
}

func runEvalACSM(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("eval acsm", "[flags] TRACE...", stderr)
	out := outFlag(fs)
	backends := fs.String("backend", "kbf,sbf,fcf", "approximate backends, comma separated (any of "+acsm.BackendNames()+" but exact, the reference)")
	ps := fs.String("p", "0.1,0.01,0.001,1e-4,1e-5", "target error rates p, comma separated")
	machine := fs.String("machine", "zeek", "state machine: zeek (conn_state) or flags (the paper's last-flags state)")
	keep := fs.Bool("keep-ended", false, "keep ended flows in the filter instead of deleting them")
	flowsOut := fs.String("flows-out", "", "write one JSON line per flow (Zeek conn.log fields) to `FILE` (- for stdout)")
	connBackend := fs.String("conn-backend", "kbf", "backend whose answers --flows-out writes ("+acsm.BackendNames()+")")
	connP := fs.Float64("conn-p", 0.001, "p of the backend --flows-out writes")
	truth := fs.String("truth", "", "flowmon gen truth sidecar (JSON lines) to score conn_state against")
	zeek := fs.String("zeek-truth", "", "Zeek ground truth TSV (shared/pcaps/real/groundtruth/zeek_conn.tsv)")
	pair := fs.Bool("pair", false, "identify flows by address pair, as the paper, instead of 5-tuple")
	quiet := fs.Bool("q", false, "no progress lines on stderr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError(fs, "no trace given")
	}
	if *flowsOut == "-" && *out == "-" {
		return usageError(fs, "--flows-out - and the table both write to stdout; give -o FILE or a flows file")
	}
	cfg := acsmeval.Config{Traces: fs.Args(), KeepEnded: *keep, PairKey: *pair, ConnP: *connP, Truth: *truth, ZeekTruth: *zeek}
	var err error
	if cfg.Machine, err = acsm.ParseMachine(*machine); err != nil {
		return usageError(fs, "--machine %q: must be zeek or flags", *machine)
	}
	if cfg.ConnBackend, err = acsm.ParseBackend(*connBackend); err != nil {
		return usageError(fs, "--conn-backend %q: must be %s", *connBackend, acsm.BackendNames())
	}
	if !(*connP > 0 && *connP < 1) {
		return usageError(fs, "--conn-p %g: must be above 0 and below 1", *connP)
	}
	for _, s := range strings.Split(*backends, ",") {
		k, err := acsm.ParseBackend(strings.TrimSpace(s))
		if err != nil || k == acsm.BackendExact {
			return usageError(fs, "--backend %q: each must be one of %s but exact (the exact backend always runs as the reference)", s, acsm.BackendNames())
		}
		cfg.Backends = append(cfg.Backends, k)
	}
	for _, s := range strings.Split(*ps, ",") {
		p, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || !(p > 0 && p < 1) {
			return usageError(fs, "--p %q: each must be above 0 and below 1", s)
		}
		cfg.Ps = append(cfg.Ps, p)
	}
	if !*quiet {
		cfg.Progress = stderr
	}
	if *flowsOut != "" {
		f, err := outfile.Create(*flowsOut, stdout)
		if err != nil {
			return err
		}
		defer f.Close()
		cfg.ConnOut = f
	}
	w, err := outfile.Create(*out, stdout)
	if err != nil {
		return err
	}
	defer w.Close()
	if _, err = acsmeval.Run(cfg, w); err != nil {
		return err
	}
	if f, ok := cfg.ConnOut.(*outfile.File); ok {
		if err := f.Close(); err != nil {
			return err
		}
	}
	return w.Close()
}
