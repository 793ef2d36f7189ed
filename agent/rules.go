package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/internal/outfile"
	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/rules"
)

// alerting is the rules engine and its alert sinks, as replay (and the
// live agent) build them from --rules, --alerts-out and --alerting.
type alerting struct {
	eng      *rules.Engine
	mu       sync.Mutex // guards path: a config reload may change it
	path     string     // the rules file; "" for the embedded defaults
	log      *slog.Logger
	closeOut func() error
	stop     chan struct{}
	done     chan struct{}
	// closeWait bounds how long close waits for the alert sinks to
	// deliver what they hold (0: closeWaitDefault).
	closeWait time.Duration
}

// closeWaitDefault is what a replay's end gives the alert sinks.
const closeWaitDefault = 10 * time.Second

// replayAlertQueue is the queue of the replay's own alert output: a trace
// replays in seconds what took hours, and its alerts come as fast; a
// queue this long (a few tens of MB at most) holds such a burst while
// the writer catches up, and only a larger one is dropped, counted.
const replayAlertQueue = 1 << 16

// newAlerting loads the rules (rulesFile: a file, "" for the embedded
// defaults, "none" for none: nil, nil) and opens the sinks: alerts go to
// alertsOut as JSON lines when set (- for stdout), else to stderr as
// readable lines, or with no stderr to log (alerts.NewLogSink), to every
// sink of the alerting file, whose failures log hears, and to extra.
func newAlerting(rulesFile, alertsOut, alertingFile string, stdout, stderr io.Writer, log *slog.Logger, extra ...alerts.Sink) (*alerting, error) {
	if rulesFile == "none" {
		return nil, nil
	}
	var set *rules.Set
	var err error
	if rulesFile == "" {
		set, err = rules.Default()
	} else {
		set, err = rules.Load(rulesFile)
	}
	if err != nil {
		return nil, fmt.Errorf("load rules: %w", err)
	}
	log = orDiscard(log)
	a := &alerting{path: rulesFile, log: log, closeOut: func() error { return nil }}
	var sinks []alerts.Sink
	if alertsOut != "" {
		out, err := outfile.Create(alertsOut, stdout)
		if err != nil {
			return nil, err
		}
		a.closeOut = out.Close
		sinks = append(sinks, alerts.NewWriterSinkQueue("alerts-out", out, alerts.FormatJSON, replayAlertQueue))
	} else if stderr != nil {
		sinks = append(sinks, alerts.NewWriterSinkQueue("stderr", stderr, alerts.FormatText, replayAlertQueue))
	} else {
		sinks = append(sinks, alerts.NewLogSink("stderr", log, replayAlertQueue))
	}
	if alertingFile != "" {
		data, err := os.ReadFile(alertingFile)
		if err != nil {
			return nil, fmt.Errorf("read alerting config: %w", err)
		}
		cfg, err := alerts.ParseConfig(alertingFile, data)
		if err != nil {
			return nil, err
		}
		// A sink that starts failing, drops alerts or delivers again says
		// so, naming itself, when it happens.
		cfg.Logger = log
		more, err := cfg.Open()
		if err != nil {
			return nil, err
		}
		sinks = append(sinks, more...)
	}
	sinks = append(sinks, extra...)
	a.eng = rules.NewEngine(set, alerts.NewManager(alerts.ManagerOptions{}, sinks...))
	return a, nil
}

// A rules.Shard counts the dedup stage's duplicates and takes the flows
// kept in the kernel as flow events.
var (
	_ pipeline.DuplicateConsumer = (*rules.Shard)(nil)
	_ pipeline.FlowConsumer      = (*rules.Shard)(nil)
	_ pipeline.CountConsumer     = (*rules.Shard)(nil)
)

// RulesConsumer attaches eng to a pipeline as a consumer
// (pipeline.Config.Consumers): a rules.Shard on each shard, asking the
// shard's lookups (the one for the kernel's flows reads a start's novelty
// from its event).
func RulesConsumer(eng *rules.Engine) pipeline.NewConsumer {
	return func(_, _ int, lk pipeline.Lookups) (pipeline.Consumer, error) {
		return eng.NewShard(rules.Lookups{Watchlists: lk.Watchlists, Novel: lk.Novel})
	}
}

// attach makes the rules a consumer of the pipeline cfg builds; their
// alerts' Community IDs take the records' seed.
func (a *alerting) attach(cfg *pipeline.Config) {
	a.eng.SetCommunityIDSeed(cfg.CommunityIDSeed)
	cfg.Consumers = append(cfg.Consumers[:len(cfg.Consumers):len(cfg.Consumers)], RulesConsumer(a.eng))
}

// register registers the rules' and the alerts' metrics on reg.
func (a *alerting) register(reg prometheus.Registerer) error {
	if err := a.eng.Register(reg); err != nil {
		return err
	}
	return a.eng.Manager().Register(reg)
}

// count fills the summary's alert keys: the alerts each rule raised, and
// the repeats folded into them.
func (a *alerting) count(s *pipeline.Summary) {
	s.Alerts = map[string]uint64{}
	for name, rc := range a.eng.Manager().Stats().ByRule {
		s.Alerts[name] = rc.Fired
		s.AlertsSuppressed += rc.Suppressed
	}
}

// fired is the alerts raised so far.
func (a *alerting) fired() uint64 {
	var n uint64
	for _, rc := range a.eng.Manager().Stats().ByRule {
		n += rc.Fired
	}
	return n
}

// reload re-reads the rules file; a bad file leaves the rules running and
// is reported with its positions.
func (a *alerting) reload(why string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.load(a.path, why)
}

// switchTo loads the rules file path, which replaces the running one if
// it loads.
func (a *alerting) switchTo(path, why string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.load(path, why); err != nil {
		return err
	}
	a.path = path
	return nil
}

func (a *alerting) load(path, why string) error {
	if path == "" {
		return errors.New("the embedded default rules have no file to reload (give --rules FILE)")
	}
	if err := a.eng.Reload(path); err != nil {
		a.log.Error("rules not reloaded, the old ones stay", "why", why, "file", path, "err", err)
		return err
	}
	a.log.Info("rules reloaded", "why", why, "file", path, "rules", a.eng.Set().Len())
	return nil
}

// watch reloads the rules when the file's modification time or size
// changes (checked every second), and with onHUP on SIGHUP, until close.
// (Without onHUP, the config's reload reads the rules at SIGHUP.)
func (a *alerting) watch(onHUP bool) {
	a.stop, a.done = make(chan struct{}), make(chan struct{})
	hup := make(chan os.Signal, 1)
	if onHUP {
		signal.Notify(hup, syscall.SIGHUP)
	}
	go func() {
		defer close(a.done)
		defer signal.Stop(hup)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		last := a.stat()
		for {
			select {
			case <-a.stop:
				return
			case <-hup:
				// load logs a failed reload; the old rules keep running.
				_ = a.reload("SIGHUP")
				last = a.stat()
			case <-tick.C:
				if now := a.stat(); now != last {
					last = now
					// load logs a failed reload; the old rules keep running.
					_ = a.reload("rules file changed")
				}
			}
		}
	}()
}

type fileStamp struct {
	mod  time.Time
	size int64
}

func (a *alerting) stat() fileStamp {
	a.mu.Lock()
	path := a.path
	a.mu.Unlock()
	if path == "" {
		return fileStamp{}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{fi.ModTime(), fi.Size()}
}

// close stops watching and flushes the sinks (for at most 10 s: a sink
// whose destination is down keeps what it could not deliver, counted).
func (a *alerting) close() error {
	if a.stop != nil {
		close(a.stop)
		<-a.done
	}
	wait := a.closeWait
	if wait == 0 {
		wait = closeWaitDefault
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return errors.Join(a.eng.Manager().Close(ctx), a.closeOut())
}
