package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/internal/dedup"
	"github.com/flowmon/flowmon/internal/engine"
	"github.com/flowmon/flowmon/kbf"
)

func init() {
	commands["replay"] = command{
		summary: "replay pcap/pcapng files (.gz, - for stdin) through the pipeline and summarise",
		run:     runReplay,
	}
}

func runReplay(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the summary as one JSON object")
	noProgress := fs.Bool("no-progress", false, "never draw the progress bar")
	cfg := engine.DefaultConfig()
	backend := fs.String("backend", "kbf", "ACSM backend: kbf, sbf, fcf or exact")
	encoder := fs.String("kbf-encoder", "sidon", "kbf backend's value codes: sidon (fast decode) or greedy (the paper's Algorithm 1)")
	layout := fs.String("kbf-layout", "standard", "kbf backend's cell placement: standard (the paper's) or blocked (a flow's cells in three cache lines; fewer cache misses, more errors when the ACSM is overloaded)")
	machine := fs.String("machine", "zeek", "state machine: zeek (conn_state) or flags (the paper's last-flags machine)")
	fs.IntVar(&cfg.ACSM.Capacity, "capacity", cfg.ACSM.Capacity, "expected concurrent flows (sizes the ACSM and the flow counter)")
	fs.Float64Var(&cfg.ACSM.FPRate, "p", cfg.ACSM.FPRate, "target error rate of the ACSM")
	fs.DurationVar(&cfg.Dedup.Window, "dedup-window", cfg.Dedup.Window, "how long a packet is remembered to drop its duplicates")
	fs.BoolVar(&cfg.NoDedup, "no-dedup", false, "count duplicate packets instead of dropping them")
	fs.IntVar(&cfg.MaxFlows, "max-flows", cfg.MaxFlows, "most open flows the replay's flow table holds (records, counts); past it idle flows time out early")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "goroutines the per-flow stages are sharded over by flow hash (the flow log's order depends on it, and is the same every run for a given count)")
	fs.BoolVar(&cfg.DecodeOnly, "decode-only", false, "only read, decode and count packets by type (no flows, no stages)")
	retrans := fs.Duration("retrans-window", 0, "also mark TCP retransmissions seen within this window (0: off)")
	flowLog := fs.String("flows-out", "", "write one JSON line per flow to this file (- for stdout)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the replay to this file")
	listen := fs.String("listen", "", "serve /metrics and /api/v1/ccf on this address (host:port) during the replay")
	linger := fs.Bool("linger", false, "with --listen: keep serving after the replay until interrupted")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: flowmon replay [flags] FILE...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errUsage
	}
	var err error
	if cfg.ACSM.Backend, err = acsm.ParseBackend(*backend); err != nil {
		return err
	}
	if cfg.ACSM.Machine, err = acsm.ParseMachine(*machine); err != nil {
		return err
	}
	if cfg.ACSM.KBFEncoder, err = kbf.ParseEncoder(*encoder); err != nil {
		return fmt.Errorf("--kbf-encoder: %w", err)
	}
	if cfg.ACSM.KBFLayout, err = kbf.ParseLayout(*layout); err != nil {
		return fmt.Errorf("--kbf-layout: %w", err)
	}
	cfg.FlowCount.ExpectedFlows = uint64(max(cfg.ACSM.Capacity, 1))
	if *retrans > 0 {
		cfg.Dedup.Retrans = dedup.RetransConfig{Enabled: true, Window: *retrans}
	}
	switch *flowLog {
	case "":
	case "-":
		cfg.FlowLog = stdout
	default:
		f, err := os.Create(*flowLog)
		if err != nil {
			return err
		}
		defer f.Close()
		cfg.FlowLog = f
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	opt := engine.ReplayOptions{Config: cfg}
	if *listen != "" {
		pl, err := engine.NewPipeline(cfg)
		if err != nil {
			return err
		}
		h, err := engine.Handler(pl)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		fmt.Fprintf(stderr, "serving http://%s/metrics and %s\n", ln.Addr(), "/api/v1/ccf")
		defer func() {
			if *linger {
				sig := make(chan os.Signal, 1)
				signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
				<-sig
			}
			srv.Close()
		}()
		opt.Pipeline = pl
	}
	var stop func()
	if !*noProgress && isTerminal(stderr) {
		opt.Progress = &engine.Progress{}
		stop = drawProgress(stderr, opt.Progress)
	}
	s, err := engine.Replay(fs.Args(), opt)
	if stop != nil {
		stop()
	}
	if s == nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		if encErr := enc.Encode(s); encErr != nil {
			return encErr
		}
	} else {
		printSummary(stdout, s)
	}
	return err
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// drawProgress redraws one status line on w every 200 ms until stopped.
func drawProgress(w io.Writer, p *engine.Progress) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		start := time.Now()
		for {
			select {
			case <-done:
				fmt.Fprint(w, "\r\033[K")
				return
			case <-t.C:
				pk := p.Packets.Load()
				rate := float64(pk) / time.Since(start).Seconds()
				read, all := p.BytesRead.Load(), p.BytesAll.Load()
				if all > 0 {
					frac := float64(read) / float64(all)
					bar := strings.Repeat("=", int(frac*30)) + strings.Repeat(" ", 30-int(frac*30))
					fmt.Fprintf(w, "\r[%s] %5.1f%% %d packets %.0f pkt/s", bar, 100*frac, pk, rate)
				} else {
					fmt.Fprintf(w, "\r%d MB read, %d packets, %.0f pkt/s", read>>20, pk, rate)
				}
			}
		}
	}()
	return func() { close(done); <-finished }
}

func printSummary(w io.Writer, s *engine.Summary) {
	fmt.Fprintf(w, "files            %s\n", strings.Join(s.Files, " "))
	fmt.Fprintf(w, "packets          %d (%d decoded)\n", s.Packets, s.Decoded)
	fmt.Fprintf(w, "bytes            %d\n", s.Bytes)
	fmt.Fprintf(w, "flows            %d (%d closed by idle timeout)\n", s.Flows, s.FlowsTimedOut)
	printCounts(w, "link types", s.LinkTypes)
	printCounts(w, "network", s.Network)
	printCounts(w, "transport", s.Transport)
	printCounts(w, "decode errors", s.DecodeErrors)
	printCounts(w, "skipped", s.Skipped)
	fmt.Fprintf(w, "unique packets   %d (%d duplicates dropped, %d retransmissions marked)\n", s.UniquePackets, s.Duplicates, s.Retransmissions)
	printCounts(w, "conn states", s.ConnStates)
	printCounts(w, "anomalies", s.Anomalies)
	if a := s.ACSM; a != nil {
		fmt.Fprintf(w, "acsm             %s/%s, %.1f MB, %d flows started, %d unknown answers\n",
			a.Backend, a.Machine, float64(a.MemoryBytes)/(1<<20), a.NewFlows, a.Unknown)
	}
	fmt.Fprintf(w, "trace            %s .. %s (%.3f s)\n", s.TraceStart.Format(time.RFC3339Nano), s.TraceEnd.Format(time.RFC3339Nano), s.TraceSeconds)
	fmt.Fprintf(w, "run              %.3f s, %.0f packets/s\n", s.RunSeconds, s.PacketsPerSecond)
	if s.ReadError != "" {
		fmt.Fprintf(w, "stopped          %s\n", s.ReadError)
	}
}

func printCounts(w io.Writer, name string, m map[string]uint64) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	if len(parts) == 0 {
		parts = []string{"-"}
	}
	fmt.Fprintf(w, "%-16s %s\n", name, strings.Join(parts, " "))
}
