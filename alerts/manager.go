package alerts

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/flowmon/flowmon/filters/fbf"
	"github.com/flowmon/flowmon/internal/health"
)

// Manager turns what the rules raise into alerts: it folds repeats inside
// a rule's suppress window, holds `for` conditions pending, tracks the
// firing alerts until they resolve, and hands each firing and resolved
// alert to every sink. Safe for concurrent use; the rules call it only
// when something fires (a crossing, an event past its per-shard front),
// not per packet.
//
// Memory is fixed by configuration: an alert is identified by the hash of
// its label set, and the firing ones are held in a table of at most
// MaxActive, exact, where repeats fold and from which alerts resolve.
// Past that, when a flood of distinct label sets fills the table, the
// alerts that find no room are delivered and remembered only in a
// Forgetful Bloom Filter per suppress duration (filters/fbf), which
// folds their repeats for at least their suppress window (up to half as
// long again) in fixed memory; its false positives (at most FPRate) can
// fold a new label set into nothing, counted as suppressed.
type Manager struct {
	opt   ManagerOptions
	sinks []Sink

	mu      sync.Mutex
	active  map[uint64]*entry
	seen    map[time.Duration]*fbf.FBF // suppression memory, per suppress window
	byRule  map[string]*RuleCounts
	untrack uint64 // alerts sent without a slot in the table
}

// ManagerOptions size a Manager.
type ManagerOptions struct {
	// MaxActive bounds the firing and pending alerts held (default 10000).
	MaxActive int
	// Overflow is the label sets per suppress window the suppression
	// filters are sized for (default 16384): past it their false
	// positives rise, and more new alerts fold into nothing (counted).
	Overflow int
	// FPRate is each suppression filter's false-positive rate at
	// Overflow label sets per window (default 1e-4).
	FPRate float64
}

func (o ManagerOptions) withDefaults() ManagerOptions {
	if o.MaxActive <= 0 {
		o.MaxActive = 10000
	}
	if o.Overflow <= 0 {
		o.Overflow = 16384
	}
	if o.FPRate <= 0 {
		o.FPRate = 1e-4
	}
	return o
}

// RuleCounts are one rule's alert counts.
type RuleCounts struct {
	Severity   string
	Fired      uint64 // alerts that fired
	Resolved   uint64 // alerts that resolved
	Suppressed uint64 // repeats folded into a firing alert, or into nothing
}

type entry struct {
	alert    Alert
	rule     string
	key      uint64
	suppress time.Duration
	pending  bool      // waiting for its `for`
	lastSeen time.Time // latest occurrence
	// windows are a counting rule's last two windows of crossing: the
	// shards count into the current window and the one before it.
	windows [2]int64
}

// counted reports whether o is a crossing in a window e has counted.
func (e *entry) counted(o Occurrence) bool {
	return o.Crossing && (o.Window == e.windows[0] || o.Window == e.windows[1])
}

// count notes o's window, if o is a crossing.
func (e *entry) count(o Occurrence) {
	if o.Crossing {
		e.windows = [2]int64{e.windows[1], o.Window}
	}
}

// NewManager returns a Manager delivering to sinks.
func NewManager(o ManagerOptions, sinks ...Sink) *Manager {
	o = o.withDefaults()
	return &Manager{opt: o, sinks: sinks, active: make(map[uint64]*entry, 64), seen: map[time.Duration]*fbf.FBF{}, byRule: map[string]*RuleCounts{}}
}

// Occurrence says which rule raised an alert and how it folds.
type Occurrence struct {
	Hash     uint64 // the hash of the alert's label set
	Key      uint64 // the rule's key (Check hands it back)
	Rule     string // the rule's alert name
	Severity string
	Suppress time.Duration // repeats inside fold into the firing alert
	For      time.Duration // the condition must hold this long first
	Now      time.Time     // packet time
	// Crossing marks a counting rule's key going over its threshold in
	// the rule's window of index Window. A key crosses once a window, so
	// a second report of a window's crossing folds into nothing: shards
	// count a destination's flows into shared counters, and one running
	// behind the others may still add to the window that just ended,
	// where a count that went down (half-open flows answered) can cross
	// again.
	Crossing bool
	Window   int64
}

// Fold folds n occurrences of o.Hash into its alert if the alert fired
// within its suppress window, and reports whether it did; the caller
// then builds the alert and calls Fire only when Fold says false, so a
// repeat costs no allocation.
func (m *Manager) Fold(o Occurrence, n uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fold(o, n)
}

func (m *Manager) fold(o Occurrence, n uint64) bool {
	rc := m.rule(o.Rule, o.Severity)
	if e := m.active[o.Hash]; e != nil {
		if e.counted(o) {
			return true
		}
		if e.pending {
			return false
		}
		if o.Now.Sub(e.lastSeen) <= e.suppress {
			e.alert.Count += n
			e.count(o)
			if o.Now.After(e.lastSeen) {
				e.lastSeen = o.Now
			}
			rc.Suppressed += n
			return true
		}
		// Quiet for longer than its suppress window: it resolved.
		m.resolve(o.Hash, e, e.lastSeen.Add(e.suppress))
	}
	if m.seenFilter(o.Suppress).Test(o.Hash, o.Now) {
		rc.Suppressed += n
		return true
	}
	return false
}

// Fire raises a (it fires now, unless its rule's `for` holds it pending),
// or folds it into the alert already firing with its labels. It reports
// whether the alert is firing.
func (m *Manager) Fire(o Occurrence, a Alert) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fold(o, 1) {
		return true
	}
	rc := m.rule(o.Rule, o.Severity)
	e := m.active[o.Hash]
	if e == nil {
		if len(m.active) >= m.opt.MaxActive {
			// No room to track it: deliver it, but it cannot fold or
			// resolve; counted.
			m.untrack++
			rc.Fired++
			m.seenFilter(o.Suppress).Add(o.Hash, o.Now)
			a.Count = max(a.Count, 1)
			m.send(a)
			return true
		}
		e = &entry{alert: a, key: o.Key, rule: o.Rule, suppress: o.Suppress, pending: o.For > 0, lastSeen: o.Now, windows: [2]int64{o.Window, o.Window}}
		e.alert.Count = max(a.Count, 1)
		m.active[o.Hash] = e
		if e.pending {
			return false
		}
	} else {
		// Pending: fires once the condition has held for its `for`.
		e.lastSeen = o.Now
		e.alert.Value = max(e.alert.Value, a.Value)
		e.alert.Count++
		e.count(o)
		if o.Now.Sub(e.alert.StartsAt) < o.For {
			return false
		}
		e.pending = false
		e.alert.StartsAt = o.Now
	}
	rc.Fired++
	m.send(e.alert)
	return true
}

// Check visits the active alerts of rule, in no order; holds reports
// whether the condition still holds at t for the alert's key (its
// Occurrence.Key), given when it last occurred: one that does not is
// resolved at t (dropped if it was pending). Counting rules call it at
// the end of each window.
func (m *Manager) Check(rule string, t time.Time, holds func(key uint64, last time.Time) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for h, e := range m.active {
		if e.rule == rule && !holds(e.key, e.lastSeen) {
			m.resolve(h, e, t)
		}
	}
}

// Sweep resolves the alerts of rule that had no occurrence within their
// suppress window before now (event rules: the condition stopped); grace
// is how late occurrences may be reported (the rules' shards fold repeats
// for a moment before reporting them).
func (m *Manager) Sweep(rule string, now time.Time, grace time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for h, e := range m.active {
		if e.rule == rule && now.Sub(e.lastSeen) > e.suppress+grace {
			m.resolve(h, e, e.lastSeen.Add(e.suppress))
		}
	}
}

func (m *Manager) resolve(h uint64, e *entry, t time.Time) {
	delete(m.active, h)
	if e.pending {
		return
	}
	if t.Before(e.alert.StartsAt) {
		t = e.alert.StartsAt
	}
	e.alert.EndsAt = t
	m.byRule[e.rule].Resolved++
	m.send(e.alert)
}

// seenFilter returns the suppression filter for windows of d, made on
// first use (rules have a handful of distinct suppress windows).
func (m *Manager) seenFilter(d time.Duration) *fbf.FBF {
	f := m.seen[d]
	if f == nil {
		var err error
		f, err = fbf.NewWithOptions(fbf.Options{ElementsPerPeriod: uint64(m.opt.Overflow), FPRate: m.opt.FPRate, Refresh: max(d/2, time.Millisecond)})
		if err != nil {
			panic(fmt.Sprintf("alerts: suppression filter for valid options: %v", err)) // options are ours and valid
		}
		m.seen[d] = f
	}
	return f
}

// Declare makes the rule's counts exist (at zero) before it fires, so
// its metrics are there from the start, as Prometheus advises.
func (m *Manager) Declare(rule, severity string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rule(rule, severity)
}

func (m *Manager) rule(name, severity string) *RuleCounts {
	rc := m.byRule[name]
	if rc == nil {
		rc = &RuleCounts{Severity: severity}
		m.byRule[name] = rc
	}
	return rc
}

func (m *Manager) send(a Alert) {
	for _, s := range m.sinks {
		s.Send(a)
	}
}

// ManagerStats are a Manager's counts.
type ManagerStats struct {
	ByRule    map[string]RuleCounts
	Active    int    // firing alerts held
	Pending   int    // alerts waiting for their `for`
	Untracked uint64 // fired when the table was full
	// SuppressionBytes is the suppression filters' memory.
	SuppressionBytes int
}

// Stats returns a copy of the counts.
func (m *Manager) Stats() ManagerStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := ManagerStats{ByRule: make(map[string]RuleCounts, len(m.byRule)), Untracked: m.untrack}
	for n, rc := range m.byRule {
		st.ByRule[n] = *rc
	}
	for _, e := range m.active {
		if e.pending {
			st.Pending++
		} else {
			st.Active++
		}
	}
	for _, f := range m.seen {
		st.SuppressionBytes += int(f.MemoryBytes())
	}
	return st
}

// Sinks returns the sinks the manager delivers to.
func (m *Manager) Sinks() []Sink { return m.sinks }

// Health returns the components of every sink (Sink.Health).
func (m *Manager) Health() []*health.Component {
	var out []*health.Component
	for _, s := range m.sinks {
		out = append(out, s.Health()...)
	}
	return out
}

// Close closes every sink, flushing their queues until ctx ends.
func (m *Manager) Close(ctx context.Context) error {
	var errs []error
	for _, s := range m.sinks {
		if err := s.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("close sink %s: %w", s.Name(), err))
		}
	}
	return errors.Join(errs...)
}
