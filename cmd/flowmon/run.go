package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/pipeline"
)

func init() {
	commands["run"] = command{
		summary: "capture live traffic on an interface through the pipeline: the agent",
		run:     runRun,
	}
}

// runFlags is what `flowmon run` is told: a config file, and flags that
// override its keys (config.Config.Set names them).
type runFlags struct {
	configFile string
	json       bool
	noStatus   bool
	flowsOut   string
	watchlists watchlistFlags
	wlDir      string
	historyDir string
	// historyHorizon and historyRAM are set over the config's keys as
	// given (config.Config.Set checks them), as historyDir is.
	historyHorizon string
	historyRAM     string
	overrides      [][2]string // flag name, value, in the order given
}

// runOverrides are the flags that set a config key of the same name.
var runOverrides = []struct{ name, usage string }{
	{"iface", "capture on this `interface` (the config's interface)"},
	{"source", "capture source: afpacket (Linux, the default) or pcap (libpcap; a build with -tags pcap)"},
	{"workers", "capture sockets and shards, one goroutine each, 1..256 (default: the CPUs)"},
	{"listen", "serve /metrics, /healthz and /-/ready on this `host:port` (default 127.0.0.1:9100)"},
	{"snapshot", "save the state to `FILE` at stop and restore it at start"},
	{"user", "drop privileges to this `user` once the sockets are open"},
	{"rules", "detection rules `FILE` (default: the embedded rules; none: no rules)"},
	{"alerting", "alert sinks `FILE` (YAML: stdout, file, webhook, alertmanager)"},
}

func parseRunFlags(args []string, stderr io.Writer) (*runFlags, error) {
	f := &runFlags{}
	fs := newFlagSet("run", "[flags]", stderr,
		"\nCaptures live traffic and runs the pipeline (dedup, ACSM, flow counts, rules) until SIGINT or SIGTERM,",
		"which drain it, save its state (--snapshot) and print the summary. SIGHUP reloads the rules, the watchlists and what of --config FILE may change live.")
	fs.StringVar(&f.configFile, "config", "", "the agent's YAML config `FILE` (flowmon config check FILE; flags override it)")
	fs.BoolVar(&f.json, "json", false, "print the summary at stop as one JSON object (flowmon replay --json's keys)")
	fs.BoolVar(&f.noStatus, "no-status", false, "never draw the status line (drawn only when stderr is a terminal)")
	fs.StringVar(&f.flowsOut, "flows-out", "", "write one JSON line per flow to `FILE` (the config's flow-log)")
	fs.Var(&f.watchlists, "watchlist", watchlistUsage+"; reloaded on SIGHUP")
	fs.StringVar(&f.historyDir, "history-dir", "", historyUsage)
	fs.StringVar(&f.historyHorizon, "history-horizon", "", historyHorizonUsage)
	fs.StringVar(&f.historyRAM, "history-ram", "", historyRAMUsage)
	fs.StringVar(&f.wlDir, "watchlist-dir", "", "keep the watchlists' filters in `DIR` (NAME.wl), reopened at the next start without rebuilding")
	for _, o := range runOverrides {
		fs.Func(o.name, o.usage, func(v string) error {
			f.overrides = append(f.overrides, [2]string{o.name, v})
			return nil
		})
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usageError(fs, "unexpected argument %q (run captures from --iface; replay reads files)", fs.Arg(0))
	}
	return f, nil
}

// loadRunConfig is the config file's settings (the defaults without one)
// with the flags applied over them.
func loadRunConfig(f *runFlags) (config.Config, error) {
	c := config.Default()
	if f.configFile != "" {
		var err error
		if c, err = config.Load(f.configFile); err != nil {
			return c, err
		}
	}
	for _, o := range f.overrides {
		if err := c.Set(o[0], o[1]); err != nil {
			return c, err
		}
	}
	if f.flowsOut != "" {
		if err := c.Set("flow-log", f.flowsOut); err != nil {
			return c, err
		}
	}
	if err := setLookupFlags(&c, f); err != nil {
		return c, err
	}
	if c.Interface == "" {
		return c, errors.New("no interface to capture on: give --iface or the config's interface")
	}
	return c, nil
}

func runRun(args []string, stdout, stderr io.Writer) (rerr error) {
	f, err := parseRunFlags(args, stderr)
	if err != nil {
		return err
	}
	cfg, err := loadRunConfig(f)
	if err != nil {
		return err
	}
	ecfg, err := cfg.Pipeline.Config()
	if err != nil {
		return err
	}
	closeLog, err := openFlowLog(cfg.FlowLog, stdout, stderr, &ecfg)
	if err != nil {
		return err
	}
	defer closeInto(closeLog, &rerr)
	srcs, err := openSources(&cfg)
	if err != nil {
		return err
	}
	defer func() {
		for _, s := range srcs {
			s.Close()
		}
	}()
	al, err := newAlerting(cfg.Rules, "", cfg.Alerting, stdout, stderr)
	if err != nil {
		return err
	}
	if al != nil {
		ecfg.Rules = al.eng
		al.watch() // SIGHUP and changes of the file reload the rules
		defer func() {
			if cerr := al.close(); cerr != nil && rerr == nil {
				rerr = cerr
			}
		}()
	}
	hs := historySpec{dir: cfg.History.Dir, horizon: cfg.History.Horizon, ram: uint64(cfg.History.RAM)}
	lk, err := openLookups(asWatchlistFlags(cfg.Watchlists.Lists), cfg.Watchlists.Dir, hs, al, &ecfg, stderr)
	if err != nil {
		return err
	}
	defer closeInto(lk.close, &rerr)
	pl, err := pipeline.NewLivePipeline(ecfg, srcs)
	if err != nil {
		return err
	}
	if p := cfg.Snapshot.Path; p != "" {
		restoreSnapshot(pl, p, cfg.Snapshot.MaxAge, stderr)
	}
	var reload func() error
	if al != nil {
		reload = func() error { return al.reload("POST /-/reload") }
	}
	var ready atomic.Bool
	srv, err := serveMetrics(cfg.Listen, pl, reload, ready.Load, lk)
	if err != nil {
		return err
	}
	defer func() {
		if serr := srv.close(); serr != nil && rerr == nil {
			rerr = serr
		}
	}()
	if cfg.User != "" {
		if err := dropPrivileges(cfg.User); err != nil {
			return err
		}
	}

	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	switch {
	case f.configFile != "": // the config's reload rereads the watchlists too
		reloadOnHUP(ctx, "config", configReloader(f, cfg, al, lk.wl, stderr), stderr)
	case len(cfg.Watchlists.Lists) > 0:
		reloadOnHUP(ctx, "watchlists", lk.wl.Reload, stderr)
	}
	go stopWatchdog(ctx, cfg.StopTimeout, stderr)
	opt := pipeline.LiveOptions{Snapshot: cfg.Snapshot.Path, Progress: &pipeline.Progress{}}
	if !f.noStatus && isTerminal(stderr) {
		stop := drawStatus(stderr, pl, opt.Progress)
		defer stop()
	}
	// The sockets have been capturing into their rings since they were
	// opened; the shards start reading them now.
	ready.Store(true)
	fmt.Fprintf(stderr, "flowmon run: capturing on %s (%s, %d workers); serving http://%s/metrics\n",
		cfg.Interface, cfg.Source, len(srcs), srv.addr)
	s, err := pipeline.RunLive(ctx, pl, opt)
	ready.Store(false)
	if s == nil {
		return err
	}
	s.Interface = cfg.Interface
	if f.json {
		if encErr := json.NewEncoder(stdout).Encode(s); encErr != nil {
			return encErr
		}
	} else {
		printSummary(stdout, s)
	}
	for _, w := range s.Warnings {
		fmt.Fprintf(stderr, "flowmon run: warning: %s\n", w)
	}
	if s.SnapshotFlows != nil {
		fmt.Fprintf(stderr, "flowmon run: state saved to %s (%d open flows carried over)\n", cfg.Snapshot.Path, *s.SnapshotFlows)
	}
	return err
}

// reloadOnHUP runs reload at each SIGHUP until ctx is done, on its own
// goroutine, saying what went wrong. It asks for SIGHUP before it
// returns, so that a SIGHUP sent once the agent says it is capturing is
// not missed (asked for on the goroutine, it could come first).
func reloadOnHUP(ctx context.Context, what string, reload func() error, stderr io.Writer) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if err := reload(); err != nil {
					fmt.Fprintf(stderr, "flowmon run: SIGHUP: %s: %v\n", what, err)
				} else {
					fmt.Fprintf(stderr, "flowmon run: SIGHUP: %s reloaded\n", what)
				}
			}
		}
	}()
}

// restoreSnapshot takes over the state in path, or says why not and
// leaves the pipeline empty.
func restoreSnapshot(pl *pipeline.Pipeline, path string, maxAge time.Duration, stderr io.Writer) {
	r, err := pl.RestoreSnapshot(path, maxAge, time.Now())
	switch {
	case errors.Is(err, pipeline.ErrNoSnapshot):
		fmt.Fprintf(stderr, "flowmon run: no snapshot at %s yet: starting empty\n", path)
	case err != nil:
		fmt.Fprintf(stderr, "flowmon run: not restoring the snapshot, starting empty: %v\n", err)
	default:
		fmt.Fprintf(stderr, "flowmon run: restored %s, saved %s ago: %d open flows taken over\n",
			path, time.Since(r.Saved).Round(time.Second), r.OpenFlows)
	}
}

// stopWatchdog ends the process if, once ctx is done (a signal), the
// pipeline has not drained, saved and exited within timeout: a stop is
// bounded even if a sink or the disk hangs.
func stopWatchdog(ctx context.Context, timeout time.Duration, stderr io.Writer) {
	<-ctx.Done()
	time.Sleep(timeout)
	fmt.Fprintf(stderr, "flowmon run: stop took longer than %v; exiting without finishing\n", timeout)
	os.Exit(1)
}

// openSources opens cfg's capture source: one per worker.
func openSources(cfg *config.Config) ([]capture.Source, error) {
	workers := max(cfg.Pipeline.Workers, 1)
	switch cfg.Source {
	case "", "afpacket":
		a := cfg.AFPacket
		ac := capture.AFPacketConfig{Iface: cfg.Interface, BlockSize: a.BlockSize, BlockCount: a.BlockCount,
			FrameSize: a.FrameSize, BlockTimeout: a.BlockTimeout, Fanout: a.Fanout, Promisc: a.Promisc}
		if a.Filter != "" {
			prog, err := compileFilter(a.Filter)
			if err != nil {
				return nil, fmt.Errorf("afpacket filter: %w", err)
			}
			ac.Filter = prog
		}
		socks, err := capture.OpenAFPacket(ac, workers)
		if err != nil {
			return nil, err
		}
		srcs := make([]capture.Source, len(socks))
		for i, s := range socks {
			srcs[i] = s
		}
		return srcs, nil
	case "pcap":
		return openPcap(cfg)
	}
	return nil, fmt.Errorf("unknown source %q (afpacket or pcap)", cfg.Source)
}
