package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/health"
	"github.com/flowmon/flowmon/internal/lockfile"
	"github.com/flowmon/flowmon/internal/snapshot"
	"github.com/flowmon/flowmon/pipeline"
)

// Options are what the live agent is told beside its configuration.
type Options struct {
	// ConfigFile is the file the configuration was read from ("" for
	// none); with one, SIGHUP reads it again through Reload.
	ConfigFile string
	// Reload reads the configuration again as it was made (the file with
	// the flags over it).
	Reload func() (config.Config, error)
	// Stdout is where outputs named "-" go (the flow log, alerts).
	Stdout io.Writer
	// Logger is where the agent and every part of it say what they do,
	// what fails and what recovers (nil: nowhere), and where its alerts
	// go when no other output is named (alerts.NewLogSink).
	Logger *slog.Logger
}

// Agent is the live agent (flowmon run): its sources open, the pipeline
// built and its metrics served. Run captures; Close closes everything.
type Agent struct {
	cfg      config.Config
	opt      Options
	srcs     []capture.LiveSource
	al       *alerting // nil without rules
	lk       *lookups
	pl       *pipeline.Pipeline
	srv      *metricsServer
	log      *slog.Logger
	health   *health.Registry // what /healthz reads
	ready    atomic.Bool
	progress pipeline.Progress
	closers  closer
	reloads  *reloads   // the config's reloads at SIGHUP
	drops    *dropWatch // the kernel's drops over the last minute
	// flowLog is the flow log's file, nil without one or on stdout: a
	// snapshot keeps its mark, where the log is rewound to when that
	// snapshot is restored.
	flowLog *liveLog
}

// Open opens what cfg names: the flow log, the IPFIX and OTLP exporters, the capture sources (one per
// worker), the rules and their sinks, the watchlists and the flow
// history; builds the live pipeline, restores its snapshot and serves
// its metrics; then drops the capabilities it no longer needs, and
// becomes cfg.User. The sockets capture
// into their rings from here on; Run reads them.
func Open(cfg config.Config, opt Options) (_ *Agent, rerr error) {
	a := &Agent{cfg: cfg, opt: opt, log: orDiscard(opt.Logger), health: health.NewRegistry()}
	log := a.log
	defer func() {
		if rerr != nil {
			a.closers.close()
		}
	}()
	// Before anything opens: a snapshot directory the user cannot write
	// would lose the state at the stop, hours later.
	if err := cfg.CheckHost(); err != nil {
		return nil, err
	}
	if err := a.lockState(); err != nil {
		return nil, err
	}
	ecfg, err := cfg.Pipeline.Config()
	if err != nil {
		return nil, err
	}
	// Where the record sinks, the sources and the snapshot say when they
	// fail and recover, and whose components /healthz reads.
	ecfg.Logger, ecfg.Health = log, a.health
	rot := cfg.FlowLogRotation.Options()
	flows, err := openFlowLog(cfg.FlowLog, &rot, opt.Stdout, &ecfg)
	if err != nil {
		return nil, err
	}
	a.closers.add(undelivered(flows.close))
	a.flowLog = flows.live
	reg := newRegistry()
	if x := cfg.Export.IPFIX; len(x.Collectors) > 0 {
		o := x.Options()
		o.IngressInterface = ifaceIndex(cfg.Interface)
		// The live agent flushes at quiet times without waiting; at its
		// stop it gives the collectors their part of the stop timeout.
		o.CloseWait = sinkGrace(cfg.StopTimeout)
		closeIPFIX, err := openIPFIX(&o, reg, &ecfg)
		if err != nil {
			return nil, err
		}
		a.closers.add(undelivered(closeIPFIX))
	}
	if x := cfg.Export.OTLP; x.Endpoint != "" {
		o := x.Options()
		o.Interface = cfg.Interface
		// As IPFIX's: no wait at quiet times, a part of the stop timeout
		// at the stop.
		o.CloseWait = sinkGrace(cfg.StopTimeout)
		_, closeOTLP, err := openOTLP(&o, reg, &ecfg)
		if err != nil {
			return nil, err
		}
		a.closers.add(undelivered(closeOTLP))
	}
	if a.srcs, err = openSources(&cfg, &ecfg); err != nil {
		return nil, err
	}
	if t := ecfg.KernelTable; t != nil {
		a.closers.add(t.Close) // the pipeline's Finish closes it first, but a failed Open does not get there
	}
	a.closers.add(func() error {
		for _, s := range a.srcs {
			s.Close()
		}
		return nil
	})
	if a.al, err = newAlerting(cfg.Rules, "", cfg.Alerting, opt.Stdout, nil, log); err != nil {
		return nil, err
	}
	if a.al != nil {
		a.health.Add(a.al.eng.Manager().Health()...)
		a.al.closeWait = sinkGrace(cfg.StopTimeout)
		a.al.attach(&ecfg)
		// Changes of the file reload the rules, and SIGHUP does, through
		// the config's reload when there is a config file.
		a.al.watch(opt.ConfigFile == "")
		a.closers.add(undelivered(a.al.close))
	}
	if a.lk, err = openLookups(cfg.Watchlists.Lists, cfg.Watchlists.Dir, cfg.History, a.al, &ecfg, log); err != nil {
		return nil, err
	}
	a.closers.add(a.lk.close)
	if a.pl, err = pipeline.NewLivePipeline(ecfg, a.srcs); err != nil {
		return nil, err
	}
	var mark []byte
	if p := cfg.Snapshot.Path; p != "" {
		mark = restoreSnapshot(a.pl, p, cfg.Snapshot.MaxAge, log)
	}
	if a.flowLog != nil {
		if err := a.flowLog.openAt(mark); err != nil {
			return nil, err
		}
	}
	var reload func() error
	if a.al != nil {
		reload = func() error { return a.al.reload("POST /-/reload") }
	}
	a.reloads = newReloads()
	if err := reg.Register(a.reloads); err != nil {
		return nil, fmt.Errorf("register reload metrics: %w", err)
	}
	drops := health.New("kernel-drops", log)
	a.health.Add(drops)
	a.drops = newDropWatch(a.pl.KernelStats, cfg.Health.MaxDropShare, drops)
	if err := reg.Register(a.drops); err != nil {
		return nil, fmt.Errorf("register drop metrics: %w", err)
	}
	// Ready means capturing: not while every source's interface is down
	// or gone (/healthz says which).
	ready := func() bool { return a.ready.Load() && a.pl.Capturing() }
	if a.srv, err = serveMetrics(cfg.Listen, cfg.Web, reg, a.health, a.pl, a.al, a.lk, reload, ready, log); err != nil {
		return nil, err
	}
	a.closers.add(a.srv.close)
	if err := dropPrivileges(cfg.User, reopenCaps(cfg.Source), log); err != nil {
		return nil, err
	}
	return a, nil
}

// Run captures until ctx is done (the sources drained, the state saved
// to the snapshot), and returns the summary; while it runs, SIGHUP
// reloads the config file (Options.ConfigFile) or else the watchlists.
// A summary comes with an error when the run ended on one after
// capturing.
func (a *Agent) Run(ctx context.Context) (*pipeline.Summary, error) {
	cfg := a.cfg
	switch {
	case a.opt.ConfigFile != "": // the config's reload rereads the watchlists too
		reloadOnHUP(ctx, "config", a.reloads.wrap(configReloader(a.opt.ConfigFile, a.opt.Reload, cfg, a.al, a.lk.wl, a.log)), a.log)
	case len(cfg.Watchlists.Lists) > 0:
		reloadOnHUP(ctx, "watchlists", a.reloads.wrap(a.lk.wl.Reload), a.log)
	}
	opt := pipeline.LiveOptions{Snapshot: cfg.Snapshot.Path, SnapshotEvery: cfg.Snapshot.Interval, Progress: &a.progress}
	if a.flowLog != nil {
		opt.Mark = a.flowLog.mark
	}
	// The sockets have been capturing into their rings since they were
	// opened; the shards start reading them now. Once the stop begins the
	// agent is not ready (503) while it drains and saves its state, the
	// server still answering.
	a.ready.Store(true)
	stopping := make(chan struct{})
	defer close(stopping)
	go a.drops.run(stopping)
	go func() {
		select {
		case <-ctx.Done():
			a.ready.Store(false)
		case <-stopping:
		}
	}()
	source := cfg.Source
	if at := attachedAt(a.srcs); at != "" {
		source += " at " + at
	}
	a.log.Info("capturing on the interface", "interface", cfg.Interface, "source", source, "flow_state", cfg.Pipeline.FlowState, "workers", len(a.srcs),
		"metrics", cfg.Web.Scheme()+"://"+a.srv.addr.String()+"/metrics")
	s, err := pipeline.RunLive(ctx, a.pl, opt)
	a.ready.Store(false)
	if s != nil {
		s.Interface = cfg.Interface
		if a.al != nil {
			a.al.count(s)
		}
	}
	return s, err
}

// Status is a running agent's figures, for a status line.
type Status struct {
	Packets   uint64 // read, summed over the sources
	OpenFlows uint64 // flows in the shards' tables, as last published
	Alerts    uint64 // alerts fired
	Kernel    capture.KernelStats
}

// Status reads the running agent's figures; any goroutine may call it.
func (a *Agent) Status() Status {
	st := a.pl.Status()
	s := Status{Packets: a.progress.Packets.Load(), OpenFlows: st.OpenFlows, Kernel: st.Kernel}
	if a.al != nil {
		s.Alerts = a.al.fired()
	}
	return s
}

// Close stops serving the metrics, flushes the alert sinks, and closes
// the lookups, the sources and the flow log.
func (a *Agent) Close() error { return a.closers.close() }

// lockState locks the snapshot and the flow log (lockfile.Take) for as
// long as the agent is open, before either is read or written: a second
// agent on the same state would take over the running one's flows, cut
// its flow log back to the snapshot's mark and log every flow twice. It
// fails with a lockfile.HeldError naming the file and the holder's PID.
func (a *Agent) lockState() error {
	for _, f := range []struct{ key, path string }{{"snapshot.path", a.cfg.Snapshot.Path}, {"flow-log", a.cfg.FlowLog}} {
		if f.path == "" || f.path == "-" {
			continue
		}
		h, err := lockfile.Take(f.path)
		if err != nil {
			return fmt.Errorf("%s: %w; another agent runs on it: stop that one, or give this one its own %s", f.key, err, f.key)
		}
		a.closers.add(h.Release)
	}
	return nil
}

// sinkGrace is what a stop gives the alert sinks, and the IPFIX and OTLP
// collectors, to deliver what they hold: a quarter of the stop timeout
// each, so that with the draining and the snapshot the stop ends within
// it, saying what was left undelivered, before the watchdog ends the
// process without a word on the state.
func sinkGrace(stopTimeout time.Duration) time.Duration { return stopTimeout / 4 }

// UndeliveredError is an output's failure to deliver what it held at the
// stop or before (the flow log, a record sink, an alert sink): a loss the
// log names and the metrics count, which leaves the state saved.
type UndeliveredError struct{ Err error }

func (e *UndeliveredError) Error() string { return e.Err.Error() }
func (e *UndeliveredError) Unwrap() error { return e.Err }

// undelivered marks close's errors as outputs' (UndeliveredError).
func undelivered(close func() error) func() error {
	return func() error {
		if err := close(); err != nil {
			return &UndeliveredError{err}
		}
		return nil
	}
}

// OnlyUndelivered says whether every error err joins is an output's
// failure to deliver (UndeliveredError, pipeline.SinkError): a run that
// ended so captured and saved its state, and lost only what the log
// names.
func OnlyUndelivered(err error) bool {
	if err == nil {
		return false
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !OnlyUndelivered(e) {
				return false
			}
		}
		return true
	}
	var ue *UndeliveredError
	var se *pipeline.SinkError
	return errors.As(err, &ue) || errors.As(err, &se)
}

// ifaceIndex is the interface's index, the records' ingressInterface (0:
// unknown, not exported).
func ifaceIndex(name string) uint32 {
	ifi, err := net.InterfaceByName(name)
	if err != nil || ifi.Index <= 0 {
		return 0
	}
	return uint32(ifi.Index)
}

// restoreSnapshot takes over the state in path, or says why not and
// leaves the pipeline empty; it returns the mark the snapshot holds, nil
// when none was taken over. A refused snapshot is renamed aside
// (snapshot.Reject), so that the run's first snapshot does not write over
// what an operator may want to look into.
func restoreSnapshot(pl *pipeline.Pipeline, path string, maxAge time.Duration, log *slog.Logger) []byte {
	r, err := pl.RestoreSnapshot(path, maxAge, time.Now())
	switch {
	case errors.Is(err, pipeline.ErrNoSnapshot):
		log.Info("no snapshot yet: starting empty", "file", path)
	case err != nil:
		kept, rerr := snapshot.Reject(path)
		if rerr != nil {
			kept = fmt.Sprintf("not kept aside: %v", rerr)
		} else {
			kept = "kept as " + kept
		}
		log.Warn("snapshot refused, starting empty", "file", path, "kept", kept, "err", err)
	default:
		log.Info("snapshot restored", "file", path, "age", time.Since(r.Saved).Round(time.Second).String(), "open_flows", r.OpenFlows)
		return r.Mark
	}
	return nil
}
