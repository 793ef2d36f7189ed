package agent

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/health"
	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/record"
	"github.com/flowmon/flowmon/record/ipfix"
	"github.com/flowmon/flowmon/record/otlp"
)

// replayFlushWait bounds how long the end of a replay waits for the IPFIX
// exporter to send what it queued, beyond the time the queue takes at the
// collectors' rate (ipfix.Exporter.FlushWait): only a collector that is
// down makes it wait that long.
const replayFlushWait = 30 * time.Second

// ReplayOptions are what a replay (flowmon replay) runs with beside its
// files.
type ReplayOptions struct {
	// Pipeline is the stages' configuration (pipeline.Settings.Config).
	Pipeline pipeline.Config
	// FlowsOut is the flow log: a file, - for Stdout, "" for none.
	FlowsOut string
	// IPFIX, when not nil, exports the records to its collectors, at
	// their pace (ipfix.Options.WaitForRoom); the replay's end waits for
	// them to be sent (FlushWait, by default 30 s, plus the queue's time
	// at the rate).
	IPFIX *ipfix.Options
	// OTLP, when not nil, exports the records to its collector, at its
	// pace (otlp.Options.WaitForRoom); the replay's end waits up to its
	// FlushWait (by default 30 s) for them to be sent, and the summary
	// says what was (Summary.OTLP).
	OTLP *otlp.Options
	// Rules is the rules file: "" for the embedded rules, "none" for
	// none. A file is reloaded on SIGHUP, when it changes and on
	// POST /-/reload.
	Rules string
	// AlertsOut receives the alerts as JSON lines (- for Stdout); ""
	// writes them to Stderr as readable lines.
	AlertsOut string
	// Alerting is an alert sinks file (alerts.ParseConfig), "" for none.
	Alerting string
	// Watchlists are the lists watchlist rules ask about, in memory.
	Watchlists []config.Watchlist
	// History is the host-pair history novelty rules ask (Dir "" for
	// none).
	History config.History
	// Listen, when set, serves the metrics and /api/v1/ccf on this
	// address until Close, secured as Web says (as flowmon run's server:
	// beyond loopback only with TLS or basic auth; POST /-/reload only
	// with Web.EnableLifecycle).
	Listen string
	Web    config.Web
	// Filter, when set, keeps only the frames it accepts (ReplayFilter
	// compiles it from the command line).
	Filter *capture.Filter
	// Observers see the replay beside its outputs (the report's
	// collector): their consumers and record sinks join the pipeline's,
	// their alert sinks the rules'.
	Observers Observers
	Stdout    io.Writer // where outputs named "-" go
	Stderr    io.Writer // where the alerts go without AlertsOut
	// Logger is where the replay and its parts say what they do, what
	// fails and what recovers (nil: nowhere).
	Logger *slog.Logger
}

// Observers are what watches a replay beside its outputs.
type Observers struct {
	Consumers  []pipeline.NewConsumer
	Sinks      []record.Named
	AlertSinks []alerts.Sink
}

// Replayer replays capture files through a pipeline and the rules
// (OpenReplay).
type Replayer struct {
	opt     ReplayOptions
	cfg     pipeline.Config
	al      *alerting // nil without rules
	pl      *pipeline.Pipeline
	otlp    *otlp.Exporter // nil without OTLP export
	closers closer
}

// OpenReplay opens what opt names: the flow log, the IPFIX and OTLP exporters, the
// rules and their sinks, the watchlists, the flow history, and with
// Listen the pipeline and its metrics server.
func OpenReplay(opt ReplayOptions) (_ *Replayer, rerr error) {
	r := &Replayer{opt: opt, cfg: opt.Pipeline}
	defer func() {
		if rerr != nil {
			r.closers.close()
		}
	}()
	log, hr := orDiscard(opt.Logger), health.NewRegistry()
	r.cfg.Logger, r.cfg.Health = log, hr
	flows, err := openFlowLog(opt.FlowsOut, nil, opt.Stdout, &r.cfg)
	if err != nil {
		return nil, err
	}
	r.closers.add(flows.close)
	r.cfg.Consumers = append(r.cfg.Consumers[:len(r.cfg.Consumers):len(r.cfg.Consumers)], opt.Observers.Consumers...)
	r.cfg.Sinks = append(r.cfg.Sinks[:len(r.cfg.Sinks):len(r.cfg.Sinks)], opt.Observers.Sinks...)
	reg := newRegistry()
	if opt.IPFIX != nil {
		o := *opt.IPFIX
		if o.FlushWait == 0 {
			o.FlushWait = replayFlushWait
		}
		// A replay goes at its collectors' pace rather than drop.
		o.WaitForRoom = true
		closeIPFIX, err := openIPFIX(&o, reg, &r.cfg)
		if err != nil {
			return nil, err
		}
		r.closers.add(undelivered(closeIPFIX))
	}
	if opt.OTLP != nil {
		o := *opt.OTLP
		if o.FlushWait == 0 {
			o.FlushWait = replayFlushWait
		}
		o.WaitForRoom = true // as IPFIX's: the collector's pace, rather than drop
		x, closeOTLP, err := openOTLP(&o, reg, &r.cfg)
		if err != nil {
			return nil, err
		}
		r.otlp = x
		r.closers.add(undelivered(closeOTLP))
	}
	al, err := newAlerting(opt.Rules, opt.AlertsOut, opt.Alerting, opt.Stdout, opt.Stderr, log, opt.Observers.AlertSinks...)
	if err != nil {
		return nil, err
	}
	r.al = al
	if al != nil {
		hr.Add(al.eng.Manager().Health()...)
	}
	lk, err := openLookups(opt.Watchlists, "", opt.History, al, &r.cfg, log)
	if err != nil {
		return nil, err
	}
	r.closers.add(lk.close)
	var reload func() error
	if al != nil {
		al.attach(&r.cfg)
		if al.path != "" {
			al.watch(true)
		}
		reload = func() error { return al.reload("POST /-/reload") }
		r.closers.add(al.close)
	}
	if opt.Listen != "" {
		if r.pl, err = pipeline.NewPipeline(r.cfg); err != nil {
			return nil, err
		}
		srv, err := serveMetrics(opt.Listen, opt.Web, reg, hr, r.pl, al, lk, reload, nil, log)
		if err != nil {
			return nil, err
		}
		log.Info("serving metrics", "url", opt.Web.Scheme()+"://"+srv.addr.String()+"/metrics")
		r.closers.add(srv.close)
	}
	return r, nil
}

// Run replays files in order (- for standard input) until they end or
// ctx is done (an error wrapping pipeline.ErrStopped), and returns the
// summary; prog, when not nil, counts the progress.
func (r *Replayer) Run(ctx context.Context, files []string, prog *pipeline.Progress) (*pipeline.Summary, error) {
	s, err := pipeline.Replay(ctx, files, pipeline.ReplayOptions{Config: r.cfg, Pipeline: r.pl, Progress: prog, Filter: r.opt.Filter})
	if s != nil && r.al != nil {
		r.al.count(s)
	}
	if s != nil && r.otlp != nil {
		s.OTLP = otlpSummary(r.otlp) // the pipeline's end flushed it
	}
	return s, err
}

// ReplayFilter compiles a replay's filter (ReplayOptions.Filter): tcpdump
// -ddd output, or in a build with -tags pcap a tcpdump expression for
// Ethernet. The error wraps capture.ErrBPF.
func ReplayFilter(s string) (*capture.Filter, error) {
	prog, err := compileFilter(s)
	if err != nil {
		return nil, err
	}
	return capture.NewFilter(prog)
}

// Close stops serving the metrics, flushes the alert sinks and closes
// the lookups and the flow log.
func (r *Replayer) Close() error { return r.closers.close() }
