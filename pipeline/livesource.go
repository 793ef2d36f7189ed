package pipeline

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/health"
)

// A live source whose interface goes down or away must not stop capture
// silently (capture/live.go says what each source sees). Its feeder asks
// the source how its interface is when a poll found nothing, at most once
// a second, and at once when Next reports capture.ErrIfaceDown; a source
// whose interface is gone is reopened (capture.LiveSource.Reopen) at the
// same pace until the interface is back, and goes on feeding its shard,
// whose state stays. Each source on an interface is a health.Component
// ("source:I:IFACE"): the stop is logged once when it begins and once
// when it ends, counted, and served (/healthz, flowmon_component_up;
// Pipeline.Sources and flowmon_capture_source_stops_total by reason):
// the per-packet path has no part in any of it.

// ifaceCheckEvery is how often a feeder asks after its source's
// interface while its polls find nothing, and retries a reopen.
const ifaceCheckEvery = time.Second

// sourceState is a live source's interface state, which its feeder sets
// and any goroutine reads.
type sourceState struct {
	iface   string
	watched bool          // the source is on an interface (capture.LiveSource.Iface)
	state   atomic.Uint32 // capture.IfaceState
	since   atomic.Int64  // when it stopped, Unix ns; 0 while up
	stops   [2]atomic.Uint64
	reopen  atomic.Pointer[string] // the last reopen's failure in this stop, nil if none
	health  *health.Component
}

// stopReasons are the stops' reasons, flowmon_capture_source_stops_total's
// reason label: index 0 for IfaceDown, 1 for IfaceGone.
var stopReasons = [2]string{"down", "gone"}

func stopIndex(st capture.IfaceState) int {
	if st == capture.IfaceGone {
		return 1
	}
	return 0
}

// newSourceStates makes the states of a live pipeline's sources, the
// components of those on an interface added to hr.
func newSourceStates(srcs []capture.LiveSource, log *slog.Logger, hr *health.Registry) []sourceState {
	ss := make([]sourceState, len(srcs))
	for i, src := range srcs {
		if iface := src.Iface(); iface != "" {
			ss[i].iface, ss[i].watched = iface, true
			ss[i].health = health.New("source:"+strconv.Itoa(i)+":"+iface, log)
			hr.Add(ss[i].health)
		}
	}
	return ss
}

// SourceHealth is one live source's state, for metrics and health checks.
type SourceHealth struct {
	Index int    // the source's (and its shard's) index
	Iface string // its interface
	State capture.IfaceState
	// Since is when it stopped (zero while up).
	Since time.Time
	// Stops count the times it stopped, by reason: [0] the interface
	// went down, [1] it went away.
	Stops [2]uint64
	// ReopenErr is why the last reopen in this stop failed ("" if none
	// did).
	ReopenErr string
}

// Sources returns the health of a live pipeline's sources that are on an
// interface (capture.LiveSource.Iface); any goroutine may call it.
func (p *Pipeline) Sources() []SourceHealth {
	var out []SourceHealth
	for i := range p.srcStates {
		ss := &p.srcStates[i]
		if !ss.watched {
			continue
		}
		h := SourceHealth{Index: i, Iface: ss.iface, State: capture.IfaceState(ss.state.Load()),
			Stops: [2]uint64{ss.stops[0].Load(), ss.stops[1].Load()}}
		if ns := ss.since.Load(); ns != 0 {
			h.Since = time.Unix(0, ns)
		}
		if e := ss.reopen.Load(); e != nil {
			h.ReopenErr = *e
		}
		out = append(out, h)
	}
	return out
}

// Capturing says whether a live pipeline has a source whose interface is
// up (true too for sources on no interface).
func (p *Pipeline) Capturing() bool {
	for i := range p.srcStates {
		if ss := &p.srcStates[i]; !ss.watched || capture.IfaceState(ss.state.Load()) == capture.IfaceUp {
			return true
		}
	}
	return len(p.srcStates) == 0
}

// sourceStops is the stops of every source.
func (p *Pipeline) sourceStops() uint64 {
	var n uint64
	for i := range p.srcStates {
		n += p.srcStates[i].stops[0].Load() + p.srcStates[i].stops[1].Load()
	}
	return n
}

// ifaceWatch is a feeder's watch of its source's interface.
type ifaceWatch struct {
	src     capture.LiveSource // nil: nothing to watch
	ss      *sourceState
	log     *slog.Logger
	i       int
	state   capture.IfaceState
	checked time.Time // the last check
	pause   *time.Timer
}

func newIfaceWatch(src capture.LiveSource, ss *sourceState, i int, log *slog.Logger) *ifaceWatch {
	w := &ifaceWatch{ss: ss, i: i, log: log}
	if ss.watched {
		w.src = src
	}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	return w
}

// check asks after the interface if a second has passed since the last
// check, or at once with force, reopens the source if its interface is
// gone, and records a change of state.
func (w *ifaceWatch) check(now time.Time, force bool) {
	if w.src == nil || (!force && now.Sub(w.checked) < ifaceCheckEvery) {
		return
	}
	w.checked = now
	st := w.src.IfaceState()
	var reopenErr error
	if st == capture.IfaceGone {
		if reopenErr = w.src.Reopen(); reopenErr != nil {
			msg := reopenErr.Error()
			w.ss.reopen.Store(&msg)
		} else {
			w.log.Info("capture source reopened", "source", w.i, "interface", w.ss.iface)
			st = w.src.IfaceState()
		}
	}
	w.set(st, now)
	if reopenErr != nil && w.state != capture.IfaceUp {
		w.ss.health.Fail(fmt.Errorf("%s; reopen: %w", w.why(), reopenErr))
	}
}

// why says why the source is stopped.
func (w *ifaceWatch) why() string {
	if w.state == capture.IfaceGone {
		return "interface " + w.ss.iface + " deleted"
	}
	return "interface " + w.ss.iface + " down"
}

func (w *ifaceWatch) set(st capture.IfaceState, now time.Time) {
	old := w.state
	if st == old {
		return
	}
	w.state = st
	w.ss.state.Store(uint32(st))
	switch {
	case old == capture.IfaceUp:
		w.ss.since.Store(now.UnixNano())
		w.ss.stops[stopIndex(st)].Add(1)
		w.ss.health.Fail(errors.New(w.why()))
	case st == capture.IfaceUp:
		w.ss.since.Store(0)
		w.ss.reopen.Store(nil)
		w.ss.health.OK()
	default:
		w.ss.health.Fail(errors.New(w.why())) // down to gone: the same stop, its error now this
	}
}

// wait waits until the next check is due or ctx is done: a source whose
// Next fails at once while its interface is missing (libpcap's) is not
// read in a loop.
func (w *ifaceWatch) wait(done <-chan struct{}) {
	if w.src == nil || w.state == capture.IfaceUp {
		return
	}
	d := ifaceCheckEvery - time.Since(w.checked)
	if d <= 0 {
		return
	}
	if w.pause == nil {
		w.pause = time.NewTimer(d)
	} else {
		w.pause.Reset(d)
	}
	select {
	case <-w.pause.C:
	case <-done:
		w.pause.Stop()
	}
}

// isIfaceDown says whether err is a source's report that its interface
// went down or away.
func isIfaceDown(err error) bool { return errors.Is(err, capture.ErrIfaceDown) }

var descSourceStops = prometheus.NewDesc("flowmon_capture_source_stops_total",
	"Times a live capture source stopped because its interface went down or away, by reason (down, gone).",
	[]string{"source", "interface", "reason"}, nil)

// sourceCollector exports the live sources' stops; whether each is up is
// flowmon_component_up{component="source:I:IFACE"}.
type sourceCollector struct{ p *Pipeline }

func (c sourceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descSourceStops
}

func (c sourceCollector) Collect(ch chan<- prometheus.Metric) {
	for _, h := range c.p.Sources() {
		i := strconv.Itoa(h.Index)
		for r, reason := range stopReasons {
			ch <- prometheus.MustNewConstMetric(descSourceStops, prometheus.CounterValue, float64(h.Stops[r]), i, h.Iface, reason)
		}
	}
}
