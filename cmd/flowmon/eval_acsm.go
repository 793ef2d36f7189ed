package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/acsm/acsmeval"
)

func init() {
	evals["acsm"] = evaluation{
		summary: "kbf vs sbf vs fcf as approximate concurrent state machines on a trace (kBF paper, Section VI)",
		run:     runEvalACSM,
	}
}

func runEvalACSM(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval acsm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: flowmon eval acsm [flags] TRACE...")
		fs.PrintDefaults()
	}
	backends := fs.String("backend", "kbf,sbf,fcf", "approximate backends, comma separated (kbf, sbf, fcf)")
	ps := fs.String("p", "0.1,0.01,0.001,1e-4,1e-5", "target error rates p, comma separated")
	machine := fs.String("machine", "zeek", "state machine: zeek (conn_state) or flags (the paper's last-flags state)")
	keep := fs.Bool("keep-ended", false, "keep ended flows in the filter instead of deleting them")
	connOut := fs.String("conn-out", "", "write one JSON line per flow (Zeek conn.log fields) to this file")
	connBackend := fs.String("conn-backend", "kbf", "backend whose answers --conn-out writes (kbf, sbf, fcf, exact)")
	connP := fs.Float64("conn-p", 0.001, "p of the backend --conn-out writes")
	truth := fs.String("truth", "", "flowmon gen truth sidecar (JSON lines) to score conn_state against")
	zeek := fs.String("zeek-truth", "", "Zeek ground truth TSV (shared/pcaps/real/groundtruth/zeek_conn.tsv)")
	pair := fs.Bool("pair", false, "identify flows by address pair, as the paper, instead of 5-tuple")
	quiet := fs.Bool("q", false, "no progress lines on stderr")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errUsage
	}
	cfg := acsmeval.Config{Traces: fs.Args(), KeepEnded: *keep, PairKey: *pair, ConnP: *connP, Truth: *truth, ZeekTruth: *zeek}
	var err error
	if cfg.Machine, err = acsm.ParseMachine(*machine); err != nil {
		fmt.Fprintf(stderr, "eval acsm: %v\n", err)
		return errUsage
	}
	if cfg.ConnBackend, err = acsm.ParseBackend(*connBackend); err != nil {
		fmt.Fprintf(stderr, "eval acsm: %v\n", err)
		return errUsage
	}
	for _, s := range strings.Split(*backends, ",") {
		k, err := acsm.ParseBackend(strings.TrimSpace(s))
		if err != nil || k == acsm.BackendExact {
			fmt.Fprintf(stderr, "eval acsm: bad --backend %q (the exact backend always runs as the reference)\n", s)
			return errUsage
		}
		cfg.Backends = append(cfg.Backends, k)
	}
	for _, s := range strings.Split(*ps, ",") {
		p, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || !(p > 0 && p < 1) {
			fmt.Fprintf(stderr, "eval acsm: bad --p value %q\n", s)
			return errUsage
		}
		cfg.Ps = append(cfg.Ps, p)
	}
	if !*quiet {
		cfg.Progress = stderr
	}
	if *connOut != "" {
		f, err := os.Create(*connOut)
		if err != nil {
			return fmt.Errorf("conn-out: %w", err)
		}
		defer f.Close()
		cfg.ConnOut = f
	}
	_, err = acsmeval.Run(cfg, stdout)
	return err
}
