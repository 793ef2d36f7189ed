package rules

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowmon/flowmon/alerts"
)

// Engine evaluates a rule set over the pipeline's packets and hands what
// fires to an alerts.Manager. The pipeline's shards each get a Shard
// (NewShard), which evaluates the rules on the shard's goroutine; the
// counting rules' per-key counters and the windows' clock are shared by
// the shards, since one destination's flows are spread over all of them.
//
// The set is swapped whole (Swap, Reload): a shard reads it once per
// packet through an atomic pointer, so a reload never stops the packets,
// and a rule whose definition did not change keeps its counters.
type Engine struct {
	set     atomic.Pointer[Set]
	mgr     *alerts.Manager
	cidSeed uint16 // of the alerts' Community IDs

	// nextTick is the packet time (ns) of the next window end or sweep;
	// a shard that sees a packet past it runs tick.
	nextTick atomic.Int64

	mu       sync.Mutex // guards shards, lists, tick's work and reload's record
	shards   []*Shard
	finished int
	// lists are the watchlists the shards were given (Lookups), which a
	// reload's rules must name only lists of.
	lists Watchlists

	reloads      atomic.Uint64
	reloadFails  atomic.Uint64
	lastReloadOK atomic.Bool
	lastReload   atomic.Int64 // wall time of the last successful load, Unix s
}

// sweepEvery is how often, in packet time, the event rules' quiet alerts
// are resolved.
const sweepEvery = int64(time.Second)

// NewEngine returns an engine evaluating set (nil: no rules) and
// delivering to mgr.
func NewEngine(set *Set, mgr *alerts.Manager) *Engine {
	e := &Engine{mgr: mgr}
	if set != nil {
		e.set.Store(set)
		set.declare(mgr)
	}
	e.lastReloadOK.Store(true)
	e.lastReload.Store(time.Now().Unix()) // the first load
	e.nextTick.Store(minInt64)
	return e
}

const minInt64 = -1 << 63

// Manager returns the alerts manager the engine delivers to.
func (e *Engine) Manager() *alerts.Manager { return e.mgr }

// Set returns the rule set in effect (nil: none).
func (e *Engine) Set() *Set { return e.set.Load() }

// Swap puts s in effect; rules whose definition did not change keep their
// counters and windows.
func (e *Engine) Swap(s *Set) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s.inherit(e.set.Load())
	s.declare(e.mgr)
	e.set.Store(s)
	e.nextTick.Store(minInt64) // the new rules' windows start at the next packet
}

// Reload reads path, and puts its rules in effect if they are valid; if
// not, the rules in effect stay and the error (every problem, with its
// position) is returned. Either way it is recorded for the metrics.
func (e *Engine) Reload(path string) error {
	e.reloads.Add(1)
	s, err := Load(path)
	if err == nil {
		e.mu.Lock()
		l := e.lists
		e.mu.Unlock()
		if err = s.CheckWatchlists(l); err != nil {
			err = fmt.Errorf("%s: %w", path, err)
		}
	}
	if err != nil {
		e.reloadFails.Add(1)
		e.lastReloadOK.Store(false)
		return fmt.Errorf("reload rules: %w", err)
	}
	e.Swap(s)
	e.lastReloadOK.Store(true)
	e.lastReload.Store(time.Now().Unix())
	return nil
}

// Load parses and compiles a rules file.
func Load(path string) (*Set, error) {
	f, err := ParseFile(path)
	if err != nil {
		return nil, err
	}
	return Compile(f)
}

// SetCommunityIDSeed sets the seed of the Community IDs the alerts that
// name a flow carry (0, the spec's default, unless set); before the
// shards run.
func (e *Engine) SetCommunityIDSeed(seed uint16) { e.cidSeed = seed }

// NewShard returns the evaluator of one pipeline shard, which asks lk
// what its watchlist and novelty rules need. Every shard of an engine is
// given the same lists; a rule in effect naming a list they have not is
// an error, and so is, on a later reload, a new rules file with one (the
// old rules stay).
func (e *Engine) NewShard(lk Lookups) (*Shard, error) {
	if err := e.CheckWatchlists(lk.Watchlists); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s := &Shard{eng: e, nextFlush: minInt64, flowNow: minInt64, lk: lk}
	e.shards = append(e.shards, s)
	e.lists = lk.Watchlists
	return s, nil
}

// tick ends the windows that packet time t has passed and resolves the
// alerts whose condition stopped; it sets the next tick.
func (e *Engine) tick(t int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t < e.nextTick.Load() {
		return // another shard ticked first
	}
	set := e.set.Load()
	next := t + sweepEvery
	now := time.Unix(0, t)
	for _, r := range set.counting {
		e.endWindow(r, t)
		next = min(next, (r.st.win.cur.Load()+1)*r.st.win.size)
	}
	for _, r := range set.dups {
		e.endDupWindow(r, t, false)
		next = min(next, (r.st.win.cur.Load()+1)*r.st.win.size)
	}
	for _, r := range set.events {
		// The shards report folded repeats every sweepEvery: allow that.
		e.mgr.Sweep(r.Alert, now, time.Duration(sweepEvery))
	}
	e.nextTick.Store(next)
}

// endWindow moves r's clock to t's window; if a window ended, it resolves
// the alerts whose key did not stay above the threshold in it, and clears
// the slot the next window will use.
func (e *Engine) endWindow(r *rule, t int64) {
	w := r.st.win
	i, _ := w.at(t)
	moved, ended, gap, ok := w.advance(i)
	if ok {
		// A key above the threshold crossed it in the window (a crossing
		// fires the alert, or folds into it): its alert holds if it
		// occurred in the window that ended.
		start, end := utc(ended*w.size), utc((ended+1)*w.size)
		e.mgr.Check(r.Alert, end, func(_ uint64, last time.Time) bool {
			return !gap && !last.Before(start)
		})
		if gap {
			r.st.reset(slot(i))
		}
	}
	if moved {
		r.st.clear(slot(i + 1))
	}
}

// clear zeroes slot i, which no shard writes: the next window's, a
// window ahead of it (a memory clear).
func (st *ruleState) clear(i int) {
	for _, c := range []keyCounter{st.counts[i], st.done[i]} {
		if c != nil {
			c.clear()
		}
	}
}

// reset zeroes slot i while shards may write it (the current window's,
// after a gap in the traffic: atomic stores).
func (st *ruleState) reset(i int) {
	for _, c := range []keyCounter{st.counts[i], st.done[i]} {
		if c != nil {
			c.reset()
		}
	}
}

// Stats are the engine's counts for metrics.
type Stats struct {
	Rules       int
	Evaluations uint64 // rule evaluations (rules tried on a packet or window)
	// Late counts the packets the counting rules left out because their
	// window was two or more behind the clock (its slot reused).
	Late         uint64
	SketchBytes  map[string]int
	Reloads      uint64
	ReloadFails  uint64
	LastReloadOK bool
	LastReload   int64 // Unix seconds of the last successful load
}

// Stats returns the engine's counts; safe for concurrent use.
func (e *Engine) Stats() Stats {
	st := Stats{
		Reloads: e.reloads.Load(), ReloadFails: e.reloadFails.Load(),
		LastReloadOK: e.lastReloadOK.Load(), LastReload: e.lastReload.Load(),
		SketchBytes: map[string]int{},
	}
	if set := e.set.Load(); set != nil {
		st.Rules = len(set.rules)
		e.mu.Lock()
		for _, r := range set.rules {
			st.SketchBytes[r.Alert] = r.st.bytes()
			if r.holdIndex >= 0 {
				st.SketchBytes[r.Alert] = len(e.shards) * holdBytes
			}
		}
		e.mu.Unlock()
	}
	e.mu.Lock()
	for _, s := range e.shards {
		st.Evaluations += s.evals.Load()
		st.Late += s.late.Load()
	}
	e.mu.Unlock()
	return st
}

// declare makes each rule's alert counts exist in mgr.
func (s *Set) declare(mgr *alerts.Manager) {
	for _, r := range s.rules {
		mgr.Declare(r.Alert, r.Severity)
	}
}
