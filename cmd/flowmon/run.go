package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/flowmon/flowmon/agent"
	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/internal/lockfile"
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
	filter     string
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
	{"source", "capture source: afpacket (Linux, the default), xdp or tc (the eBPF program, Linux; docs/run.md says which to choose) or pcap (libpcap; a build with -tags pcap)"},
	{"workers", "capture sockets and shards, one goroutine each, 1..256 (default: the CPUs)"},
	{"listen", "serve /metrics, /healthz and /-/ready on this `host:port` (default 127.0.0.1:9100); beyond loopback only with --web.config.file"},
	{"web.config.file", "Prometheus's web config `FILE` (exporter-toolkit): TLS and basic auth for --listen (the config's web.config-file)"},
	{"web.enable-lifecycle", "turn on POST /-/reload and the watchlists' POST (the config's web.enable-lifecycle)"},
	{"snapshot", "save the state to `FILE` at stop and restore it at start"},
	{"snapshot-interval", "also save the state this often while running, so a crash loses at most this `duration` of it (default 1m; 0: only at stop)"},
	{"user", "drop privileges to this `user` once the sockets are open"},
	{"rules", "detection rules `FILE` (default: the embedded rules; none: no rules)"},
	{"alerting", "alert sinks `FILE` (YAML: stdout, file, webhook, alertmanager)"},
	{"log-format", logFormatUsage + " (the config's log-format)"},
}

func parseRunFlags(args []string, stderr io.Writer) (*runFlags, error) {
	f := &runFlags{}
	fs := newFlagSet("run", "[flags]", stderr,
		"\nCaptures live traffic and runs the pipeline (dedup, ACSM, flow counts, rules) until SIGINT or SIGTERM,",
		"which drain it, save its state (--snapshot) and print the summary. SIGHUP reloads the rules, the watchlists and what of --config FILE may change live.",
		"Exit status: 0 stopped and saved; 1 the capture failed or the state was not saved; 2 bad settings;",
		"3 saved, but an output (the flow log, a record or alert sink) lost what the log names.")
	fs.StringVar(&f.configFile, "config", "", "the agent's YAML config `FILE` (flowmon config check FILE; flags override it)")
	fs.BoolVar(&f.json, "json", false, "print the summary at stop as one JSON object (flowmon replay --json's keys)")
	fs.BoolVar(&f.noStatus, "no-status", false, "never draw the status line (drawn only when stderr is a terminal)")
	fs.StringVar(&f.flowsOut, "flows-out", "", "write one JSON line per flow to `FILE` (the config's flow-log)")
	fs.StringVar(&f.filter, "filter", "", "capture only the packets this classic BPF `program` keeps, in the kernel: tcpdump -ddd output, or with -tags pcap a tcpdump expression (the config's afpacket.filter or pcap.filter, for the source)")
	fs.Var(&f.watchlists, "watchlist", watchlistUsage+"; reloaded on SIGHUP")
	fs.StringVar(&f.historyDir, "history-dir", "", historyUsage)
	fs.StringVar(&f.historyHorizon, "history-horizon", "", historyHorizonUsage)
	fs.StringVar(&f.historyRAM, "history-ram", "", historyRAMUsage)
	fs.StringVar(&f.wlDir, "watchlist-dir", "", "keep the watchlists' filters in `DIR` (NAME.wl), reopened at the next start without rebuilding")
	for _, o := range runOverrides {
		set := func(v string) error {
			f.overrides = append(f.overrides, [2]string{o.name, v})
			return nil
		}
		if config.IsBool(o.name) {
			fs.BoolFunc(o.name, o.usage, set)
		} else {
			fs.Func(o.name, o.usage, set)
		}
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
	if f.filter != "" {
		// The filter is the source's: the kernel runs it on the socket.
		switch c.Source {
		case "afpacket", "pcap":
			if err := c.Set(c.Source+".filter", f.filter); err != nil {
				return c, err
			}
		default:
			return c, fmt.Errorf("--filter: the %s source keeps packets by ebpf.cidrs and ebpf.ports, not a BPF program", c.Source)
		}
	}
	if c.Interface == "" {
		return c, errors.New("no interface to capture on: give --iface or the config's interface")
	}
	// On the settings as they will run: --listen and --web.config.file
	// may each come from the file or a flag.
	if err := c.CheckWeb(); err != nil {
		return c, err
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
		return exitWith(2, err) // bad settings, as replay's
	}
	// Alerts and log lines written while the status line is drawn erase
	// it first (statusLine.around).
	var line *statusLine
	if !f.noStatus {
		line = newStatusLine(stderr)
		stdout, stderr = line.around(stdout), line.around(stderr)
	}
	// From here on stderr holds the log's lines alone (and the status
	// line): the run's error is one of them.
	log := newLogger(stderr, cfg.LogFormat)
	defer func() { rerr = logged(log, rerr) }()
	a, err := agent.Open(cfg, agent.Options{
		ConfigFile: f.configFile,
		Reload:     func() (config.Config, error) { return loadRunConfig(f) },
		Stdout:     stdout,
		Logger:     log,
	})
	if err != nil {
		return err
	}
	defer func() {
		closeInto(a.Close, &rerr)
		// The exit status says whether the state was saved: 3 when only
		// outputs lost what the log names (alerts, records), 1 when the
		// capture failed or the state was not saved.
		if agent.OnlyUndelivered(rerr) {
			rerr = exitWith(3, rerr)
		}
	}()

	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	go stopWatchdog(ctx, cfg.StopTimeout, log)
	if line != nil {
		stop := drawStatus(line, a.Status)
		defer stop()
	}
	s, err := a.Run(ctx)
	if s == nil {
		return err
	}
	if f.json {
		if encErr := json.NewEncoder(stdout).Encode(s); encErr != nil {
			return encErr
		}
	} else {
		printSummary(stdout, s)
	}
	for _, w := range s.Warnings {
		log.Warn("summary warning", "warning", w)
	}
	if s.SnapshotFlows != nil {
		log.Info("state saved", "file", cfg.Snapshot.Path, "open_flows", *s.SnapshotFlows)
	}
	return err
}

// logged logs err, a run's error once its log is made, and returns what
// makes the command exit with err's status without printing it again.
func logged(log *slog.Logger, err error) error {
	if err == nil {
		return nil
	}
	code := 1
	var st *exitStatus
	switch {
	case errors.As(err, &st):
		code = st.code
		if st.err == nil {
			return err
		}
		err = st.err
	case errors.Is(err, lockfile.ErrHeld):
		code = 2 // settings to change, as main says
	}
	log.Error("run failed", "err", err)
	return exitWith(code, nil)
}

// closeInto runs close and keeps its error in *rerr unless one is there.
func closeInto(close func() error, rerr *error) {
	if err := close(); err != nil && *rerr == nil {
		*rerr = err
	}
}

// stopWatchdog ends the process if, once ctx is done (a signal), the
// agent has not drained, saved and exited within timeout: a stop is
// bounded even if a sink or the disk hangs.
func stopWatchdog(ctx context.Context, timeout time.Duration, log *slog.Logger) {
	<-ctx.Done()
	time.Sleep(timeout)
	log.Error("stop took longer than the stop timeout; exiting without finishing", "stop_timeout", timeout.String())
	os.Exit(1)
}
