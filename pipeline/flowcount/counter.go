package flowcount

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowmon/flowmon/filters/ccf"
)

// ErrInvalidOptions is wrapped by Options.Validate's errors.
var ErrInvalidOptions = errors.New("flowcount: invalid options")

// Defaults for zero Options fields.
const (
	DefaultWindow        = 60 * time.Second
	DefaultExpectedFlows = 100_000
	DefaultFPRate        = 1e-4
	DefaultCounterBits   = 32
)

// Options sizes a Counter.
type Options struct {
	Window        time.Duration // window length, default 60 s
	ExpectedFlows uint64        // distinct flows expected per window
	FPRate        float64       // target probability that an unseen flow reads a non-zero count
	CounterBits   int           // packets per flow per window saturate at 2^c-1 (default 32)
	Seed          uint64        // filter seed; agents compared with each other share it
}

func (o Options) withDefaults() Options {
	if o.Window == 0 {
		o.Window = DefaultWindow
	}
	if o.ExpectedFlows == 0 {
		o.ExpectedFlows = DefaultExpectedFlows
	}
	if o.FPRate == 0 {
		o.FPRate = DefaultFPRate
	}
	if o.CounterBits == 0 {
		o.CounterBits = DefaultCounterBits
	}
	return o
}

// FilterOptions returns the CCF options of one window: fixed memory.
func (o Options) FilterOptions() ccf.Options {
	o = o.withDefaults()
	return ccf.Options{Capacity: o.ExpectedFlows, FPRate: o.FPRate, CounterBits: o.CounterBits, Seed: o.Seed, MaxLevels: 1}
}

// Validate reports every problem with o, joined.
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []error
	if o.Window < time.Second {
		errs = append(errs, fmt.Errorf("%w: window %v must be >= 1s", ErrInvalidOptions, o.Window))
	}
	if err := o.FilterOptions().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrInvalidOptions, err))
	}
	return errors.Join(errs...)
}

// Snapshot is a completed window: immutable once published.
type Snapshot struct {
	Start, End time.Time
	Filter     *ccf.Filter // read only
	Packets    uint64      // packets counted
	Dropped    uint64      // packets of new flows refused by a full filter
	Partial    bool        // published by Flush before the window ended

	once sync.Once
	enc  []byte
	err  error
}

// Encoded returns the filter's MarshalBinary, computed once.
func (s *Snapshot) Encoded() ([]byte, error) {
	s.once.Do(func() { s.enc, s.err = s.Filter.MarshalBinary() })
	return s.enc, s.err
}

// Counter counts packets per flow in the current window. See the package
// doc for which methods belong to the packet goroutine.
type Counter struct {
	opts    Options
	cur     *ccf.Filter
	start   time.Time // current window start; zero before the first packet
	end     time.Time // start + Window, kept so that Add compares one time
	packets uint64
	dropped uint64
	last    atomic.Pointer[Snapshot]
	windows atomic.Uint64
}

// New returns a Counter sized by o.
func New(o Options) (*Counter, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("new flow counter: %w", err)
	}
	o = o.withDefaults()
	f, err := ccf.New(o.FilterOptions())
	if err != nil {
		return nil, fmt.Errorf("new flow counter: %w", err)
	}
	return &Counter{opts: o, cur: f}, nil
}

// Add counts one packet of the flow with hash flowHash at packet time now
// and returns the flow's packets in the current window (0 if the flow is
// new and the filter is full). A packet at or past the window's end first
// rotates the window; a packet older than the window is counted in it.
func (c *Counter) Add(flowHash uint64, now time.Time) uint64 {
	if c.Due(now) {
		c.Rotate(now)
	}
	return c.AddN(flowHash, 1)
}

// Due reports whether a packet at now falls past the current window (or
// is the first), so that Rotate must run before its packets are added. A
// caller that counts a flow's packets itself (the engine's flow table)
// adds what it holds for the ending window with AddN first.
func (c *Counter) Due(now time.Time) bool { return !now.Before(c.end) } // end is zero before the first packet

// Rotate publishes the current window and starts the one holding now
// (the first packet only starts it).
func (c *Counter) Rotate(now time.Time) {
	if c.start.IsZero() {
		c.start = now.Truncate(c.opts.Window)
		c.end = c.start.Add(c.opts.Window)
		return
	}
	c.rotate(now)
}

// AddN counts n packets of the flow with hash flowHash in the current
// window, as n calls of Add in it would (the filter's insertion of n is
// one), and returns the flow's packets in the window (0 if the flow is new
// and the filter is full: its n packets are counted as dropped).
func (c *Counter) AddN(flowHash, n uint64) uint64 {
	c.packets += n
	got, err := c.cur.Insert(flowHash, n)
	if err != nil {
		c.dropped += n
		return 0
	}
	return got
}

// AddNew is AddN for a flow the caller believes new in the window (the
// ACSM knew no state for it). Once the window's filter has refused a new
// flow it is all but full, and such a flow's packets are counted as
// dropped at once, without the lookup: under a flood of new flows that
// lookup, two cache misses, is the counter's whole cost and nearly always
// ends in a refusal. What that gives up: the rare new flow a full filter
// would still have taken (a slot a kick chain left free), and the flow
// the caller wrongly believed new (its 5-tuple already counted in the
// window: one of its packets is then dropped, not added).
func (c *Counter) AddNew(flowHash, n uint64) uint64 {
	if c.Refusing() {
		c.packets += n
		c.dropped += n
		return 0
	}
	return c.AddN(flowHash, n)
}

// Prefetch starts loading the buckets an AddN of flowHash will read and
// returns at once; it changes nothing.
func (c *Counter) Prefetch(flowHash uint64) { c.cur.Prefetch(flowHash) }

// Refusing reports whether the window's filter has refused a new flow
// (AddNew then drops new flows without a lookup).
func (c *Counter) Refusing() bool { return c.dropped > 0 }

// rotate publishes the current window and starts the one holding now. If
// whole windows passed without packets, the last complete one is empty.
func (c *Counter) rotate(now time.Time) {
	end := c.end
	next := now.Truncate(c.opts.Window)
	snap := &Snapshot{Start: c.start, End: end, Filter: c.cur, Packets: c.packets, Dropped: c.dropped}
	if next.After(end) {
		snap = &Snapshot{Start: next.Add(-c.opts.Window), End: next, Filter: ccf.NewLike(c.cur)}
	}
	c.last.Store(snap)
	c.windows.Add(1)
	c.cur = ccf.NewLike(c.cur)
	c.start, c.end, c.packets, c.dropped = next, next.Add(c.opts.Window), 0, 0
}

// Flush publishes the current window as the last one, marked Partial, and
// starts an empty one (for the end of a replay).
func (c *Counter) Flush() {
	if c.start.IsZero() {
		return
	}
	c.last.Store(&Snapshot{Start: c.start, End: c.end, Filter: c.cur,
		Packets: c.packets, Dropped: c.dropped, Partial: true})
	c.windows.Add(1)
	c.cur = ccf.NewLike(c.cur)
	c.packets, c.dropped = 0, 0
}

// Count returns the flow's packets in the current window.
func (c *Counter) Count(flowHash uint64) uint64 { return c.cur.Count(flowHash) }

// Last returns the last complete window, nil before the first one ends.
// Safe from any goroutine.
func (c *Counter) Last() *Snapshot { return c.last.Load() }

// Window describes the latest published window of one or more counters.
type Window struct {
	Start, End time.Time // zero before any window is published
	Flows      uint64    // distinct flows (the filter's count: exact up to its false positives)
	Packets    uint64
	Dropped    uint64 // packets of new flows refused by a full filter
	Partial    bool   // some counter published it with Flush
	Missing    int    // counters whose last window is older (see Handler)
}

// LastWindow sums the counters' snapshots of the latest published window,
// the one Handler serves: after a replay's Flush, the final window. The
// counters are shards holding disjoint flows, so their flows add up. Safe
// from any goroutine (it reads the immutable snapshots only).
func LastWindow(counters ...*Counter) Window {
	var w Window
	snaps := make([]*Snapshot, len(counters))
	for i, c := range counters {
		s := c.Last()
		snaps[i] = s
		if s != nil && s.Start.After(w.Start) {
			w.Start, w.End = s.Start, s.End
		}
	}
	for _, s := range snaps {
		if s == nil || !s.Start.Equal(w.Start) {
			w.Missing++
			continue
		}
		w.Flows += s.Filter.Stats().Distinct
		w.Packets += s.Packets
		w.Dropped += s.Dropped
		w.Partial = w.Partial || s.Partial
	}
	return w
}

// Stats describes the current window (packet goroutine only).
type Stats struct {
	WindowStart time.Time
	Packets     uint64
	Flows       uint64
	Dropped     uint64
	Bytes       uint64 // filter memory of one window
	Windows     uint64 // windows published so far
}

// Stats returns the current window's statistics.
func (c *Counter) Stats() Stats {
	st := c.cur.Stats()
	return Stats{WindowStart: c.start, Packets: c.packets, Flows: st.Distinct, Dropped: c.dropped,
		Bytes: st.Bytes, Windows: c.windows.Load()}
}
