package acsm

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/hashmix"
	"github.com/flowmon/flowmon/kbf"
)

// Config builds a Tracker.
type Config struct {
	Backend  BackendKind
	Machine  MachineKind
	Capacity int     // expected concurrent flows
	FPRate   float64 // target error rate of the approximate backend
	// MemoryBytes, when > 0, sizes sbf and fcf to this many bytes (for
	// comparisons at equal memory) instead of from FPRate.
	MemoryBytes int
	// Timeouts are the idle timeouts per tier (zero fields take
	// DefaultTimeouts); NoAging turns aging off: one backend, flows leave
	// only when they end (the paper's setting).
	Timeouts Timeouts
	NoAging  bool
	// KeepEnded keeps an ended flow's final state in the closed tier until
	// it ages out, so stragglers (the last ACK after both FINs) do not
	// start a new flow. By default an ended flow is deleted at once, as the
	// paper does.
	KeepEnded bool
	// ShadowRate runs an exact backend beside the approximate one on 1 in
	// ShadowRate flows (chosen by hash) and measures their disagreement.
	// 0 means 1024; a negative value turns the shadow off. The exact
	// backend has no shadow.
	ShadowRate int
	// KBFEncoder picks the kbf backend's value codes: kbf.Greedy, the
	// paper's (the default, so evaluations reproduce it), or kbf.Sidon,
	// which decodes faster (the replay pipeline's choice).
	KBFEncoder kbf.EncoderKind
	// KBFLayout places the kbf backend's cells: kbf.Standard (the paper's,
	// the default) or kbf.Blocked (a key's cells in three cache lines,
	// fewer cache misses). Blocked has the standard layout's error rates
	// up to the p-capacity but degrades faster past it: past it, it
	// leaves many more don't-know answers (docs/results/kbf.md), and an
	// overloaded replay gets conn_states wrong that the standard layout
	// gets right (docs/results/kbf-layouts.md, "Past the p-capacity in a
	// replay").
	KBFLayout kbf.LayoutKind
	// ShedNew, with the dleft backend, makes room for a new flow in a
	// full table by evicting the longest-idle flow of the new tier (a
	// handshake still open, one side only) instead of refusing the new
	// one: under a flood of new flows the half-open state goes first and
	// established flows stay (dleft.Options.Shed). Off, a full table
	// refuses the new flow, as the paper's d-left table does.
	ShedNew bool
	// ExactCap bounds the exact backend (0 means 4*Capacity).
	ExactCap int
	Seed     uint64
	// ConstLabels are added to every exported metric (e.g. a worker id).
	ConstLabels map[string]string
}

// Validate checks the config and reports every problem.
func (c Config) Validate() error {
	var errs []error
	if c.Backend >= numBackends {
		errs = append(errs, fmt.Errorf("%w: backend %d", ErrConfig, c.Backend))
	}
	if c.Machine > MachineFlags {
		errs = append(errs, fmt.Errorf("%w: machine %d", ErrConfig, c.Machine))
	}
	if c.Capacity < 1 {
		errs = append(errs, fmt.Errorf("%w: capacity %d must be >= 1", ErrConfig, c.Capacity))
	}
	if c.Backend != BackendExact && c.MemoryBytes <= 0 && !(c.FPRate > 0 && c.FPRate < 1) {
		errs = append(errs, fmt.Errorf("%w: error rate %g must be in (0, 1)", ErrConfig, c.FPRate))
	}
	if c.Timeouts.New < 0 || c.Timeouts.Established < 0 || c.Timeouts.Closed < 0 {
		errs = append(errs, fmt.Errorf("%w: timeouts %+v must not be negative", ErrConfig, c.Timeouts))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	c.Timeouts = c.Timeouts.WithDefaults()
	if c.ShadowRate == 0 {
		c.ShadowRate = 1024
	}
	return c
}

// Event is what one packet did to its flow.
type Event struct {
	Key  capture.Key // the canonical key
	Hash uint64
	// Result is the backend's answer for the flow before this packet:
	// Absent for a new flow, Unknown when it could not tell the state (the
	// packet then changes nothing).
	Result Result
	// State is the flow's conn_state after the packet (ConnUnknown when
	// the backend could not tell); for an ended flow, its final state.
	State ConnState
	// Prev is the flow's conn_state before the packet (ConnUnknown for a
	// new flow or an Unknown answer): State != Prev is a transition.
	Prev ConnState
	// OrigIsDst says the originator is Key.Dst (else Key.Src).
	OrigIsDst bool
	New       bool // the packet started a flow
	Ended     bool // the packet ended the flow
	// Reused says the packet is a SYN that started a new flow on a
	// 5-tuple whose flow had a side closed or reset (Zeek's connection
	// reuse; with KeepEnded only): New is set too, and the old flow is
	// over whether or not it had ended.
	Reused    bool
	Anomalies Anomaly
	// Value is the machine's stored value after the packet (valid unless
	// Result is Unknown); ValueState maps it back to a conn_state.
	Value uint16
}

// Originator returns the key directed from originator to responder.
func (e *Event) Originator() capture.Key {
	if e.OrigIsDst {
		return e.Key.Reverse()
	}
	return e.Key
}

// Tracker follows every flow's state through one backend. It is owned by
// one goroutine (Observe, Query and Flush are not safe for concurrent
// use); Counts, Stats and the metrics collector may be read from any
// goroutine.
type Tracker struct {
	cfg    Config
	m      *machine
	st     *store
	shadow *store
	own    tally
	c      counters
}

// tally is what Observe counts, in plain fields the owner alone touches
// (an atomic add is a locked instruction, several nanoseconds a packet);
// publish copies it to counters every publishEvery packets, at Flush and
// before the state is saved.
type tally = tallyOf[uint64]

// tallyOf holds Observe's counts, plain (tally) or atomic (counters, where
// they are published).
type tallyOf[T any] struct {
	packets, skipped, newFlows, unknown T
	ended                               [NumConnStates]T
	anomalies                           [numAnomalies]T
	shChecks, shFP, shFN, shWrong       T
}

// tallyFields is the number of a tally's counts.
const tallyFields = 4 + NumConnStates + numAnomalies + 4

// fields lists the counts, in one order for both kinds.
func (o *tallyOf[T]) fields(f *[tallyFields]*T) {
	f[0], f[1], f[2], f[3] = &o.packets, &o.skipped, &o.newFlows, &o.unknown
	i := 4
	for k := range o.ended {
		f[i], i = &o.ended[k], i+1
	}
	for k := range o.anomalies {
		f[i], i = &o.anomalies[k], i+1
	}
	f[i], f[i+1], f[i+2], f[i+3] = &o.shChecks, &o.shFP, &o.shFN, &o.shWrong
}

// counters are what other goroutines read (Counts, Stats, Samples).
type counters struct {
	tallyOf[atomic.Uint64]
	memory, live, shadowLive       atomic.Int64
	inserts, insertFails, updates  atomic.Uint64
	deletes, dontKnow, decodeFails atomic.Uint64
	expired, shed                  atomic.Uint64
}

// New builds a Tracker. Its metrics are read with Samples (the engine
// exports them on its Prometheus registry).
func New(cfg Config) (*Tracker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new acsm tracker: %w", err)
	}
	cfg = cfg.withDefaults()
	t := &Tracker{cfg: cfg, m: machineFor(cfg.Machine)}
	st, err := newStore(t.m, &cfg, cfg.Backend, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("new acsm tracker: %w", err)
	}
	t.st = st
	if cfg.ShadowRate > 0 && cfg.Backend != BackendExact {
		sc := cfg
		sc.Capacity = max(1, cfg.Capacity/cfg.ShadowRate*2)
		sc.ExactCap = max(16, 4*sc.Capacity)
		sc.MemoryBytes = 0
		if t.shadow, err = newStore(t.m, &sc, BackendExact, 0); err != nil {
			return nil, fmt.Errorf("new acsm shadow: %w", err)
		}
	}
	t.publish()
	return t, nil
}

// Values is the number of distinct values the machine stores.
func (t *Tracker) Values() int { return t.m.values }

// Observe applies one packet to its flow. It does not allocate (the exact
// backend aside, whose map grows up to its cap).
func (t *Tracker) Observe(p *capture.Packet) Event {
	var ev Event
	t.ObserveInto(p, &ev)
	return ev
}

// ObserveInto is Observe writing the event into ev, for a caller that
// keeps one (the engine's shard): the event, 80 bytes, is then written
// once instead of being copied out.
func (t *Tracker) ObserveInto(p *capture.Packet, ev *Event) {
	*ev = Event{Key: p.Key, Hash: p.Hash}
	o := &t.own
	if p.Fragment == capture.LaterFragment || (p.Key.Proto == capture.ProtoTCP && !p.HasTCP) {
		o.skipped++
		return
	}
	if o.packets++; o.packets%publishEvery == 0 {
		t.publish()
	}
	now := p.Timestamp.UnixNano()
	t.st.rotate(now)
	var flags capture.TCPFlags
	if p.Key.Proto == capture.ProtoTCP {
		flags = p.Flags
		ev.Anomalies = flagAnomalies(flags)
	}
	data := p.PayloadLen > 0
	t.step(t.st, p, flags, data, ev)
	if t.shadow != nil && hashmix.Reduce(hashmix.Mix(p.Hash^0x5348414457), uint64(t.cfg.ShadowRate)) == 0 {
		t.shadow.rotate(now)
		sev := Event{}
		t.step(t.shadow, p, flags, data, &sev)
		o.shChecks++
		switch {
		case sev.Result == Absent && ev.Result != Absent:
			o.shFP++
		case sev.Result != Absent && ev.Result != Found:
			o.shFN++
		case sev.State != ev.State || sev.OrigIsDst != ev.OrigIsDst:
			o.shWrong++
		}
	}
	switch {
	case ev.New:
		o.newFlows++
	case ev.Result == Unknown:
		o.unknown++
	}
	if ev.Ended {
		o.ended[ev.State]++
	}
	for a := ev.Anomalies; a != 0; a &= a - 1 {
		i := 0
		for x := a & -a; x > 1; x >>= 1 {
			i++
		}
		o.anomalies[i]++
	}
}

// Prefetch starts loading the backend memory that Observe of a packet
// with flow hash h will read, and returns at once. A caller holding a batch
// of packets calls it a few packets ahead of Observe, so that the cache
// misses of several flows overlap; Observe's results are the same with or
// without it.
func (t *Tracker) Prefetch(h uint64) { t.st.prefetch(h) }

// flagAnomalies are the anomalies a TCP header shows by itself.
func flagAnomalies(f capture.TCPFlags) Anomaly {
	var a Anomaly
	if f&(fS|fF) == fS|fF {
		a |= SynFin
	}
	if f&(fS|fR) == fS|fR {
		a |= SynRst
	}
	if f&(fF|fR) == fF|fR {
		a |= FinRst
	}
	if f&0x3F == 0 {
		a |= NullScan
	}
	if f&(fF|capture.PSH|capture.URG) == fF|capture.PSH|capture.URG {
		a |= XmasScan
	}
	return a
}

// step runs the machine for one packet against one store.
func (t *Tracker) step(st *store, p *capture.Packet, flags capture.TCPFlags, data bool, ev *Event) {
	m := t.m
	h := p.Hash
	v, res, l := st.lookup(h)
	ev.Result = res
	switch res {
	case Unknown:
		ev.State = ConnUnknown
		return
	case Found:
		reuse := t.cfg.KeepEnded && m.closed[v] && flags&(fS|fA|fF|fR) == fS
		if !reuse {
			ev.Prev = m.conn[v]
			isOrig := p.Reversed == m.origIsDst[v]
			tr := m.next[int(v)*numInputs+int(inputOf(isOrig, data, flags))]
			ev.Anomalies |= tr.anomaly
			ev.State, ev.OrigIsDst, ev.Value = m.conn[tr.next], m.origIsDst[tr.next], tr.next
			if tr.ends {
				ev.Ended = true
				if !t.cfg.KeepEnded {
					st.remove(h, l, v)
					return
				}
			}
			st.put(h, l, v, uint32(tr.next))
			return
		}
		st.remove(h, l, v)
		l = nowhere
		ev.Reused = true
	}
	flip := flipNew(p)
	origIsDst := p.Reversed != flip
	kind := kindOf(p.Key.Proto)
	rst := kind == kindTCP && !flip && flags&(fS|fA|fF|fR) == fS
	v0 := m.start[kind][b2i(origIsDst)][b2i(rst)]
	tr := m.next[int(v0)*numInputs+int(inputOf(!flip, data, flags))]
	ev.New = true
	ev.Anomalies |= tr.anomaly
	ev.State, ev.OrigIsDst, ev.Value = m.conn[tr.next], m.origIsDst[tr.next], tr.next
	if tr.ends || m.terminal[tr.next] {
		ev.Ended = true
		if !t.cfg.KeepEnded {
			return
		}
	}
	st.put(h, l, 0, uint32(tr.next))
}

// ForgetEnded deletes the flow with hash h if the backend holds it with a
// side closed or reset, so that its next packet starts a new flow: Zeek
// removes a closed connection tcp_close_delay after its close, and any
// packet after that opens a new one. The caller (the flow table, which
// keeps the time a flow ended) calls it then. A side closed, not the
// ended state itself, is asked: a flow that ended by one side's FIN
// while the other had not spoken leaves that state when the other's
// stragglers come (Zeek's connection has ended all the same). It
// allocates nothing.
func (t *Tracker) ForgetEnded(h uint64) {
	t.forgetEnded(t.st, h)
	if t.shadow != nil {
		t.forgetEnded(t.shadow, h)
	}
}

func (t *Tracker) forgetEnded(st *store, h uint64) {
	if v, res, l := st.lookup(h); res == Found && t.m.closed[v] {
		st.remove(h, l, v)
	}
}

// Query returns the state the backend holds for a flow (key in either
// direction).
func (t *Tracker) Query(k capture.Key) (ConnState, bool, Result) {
	return t.QueryHash(k.Hash())
}

// QueryHash is Query by flow hash.
func (t *Tracker) QueryHash(h uint64) (state ConnState, origIsDst bool, r Result) {
	v, r, _ := t.st.lookup(h)
	if r != Found {
		return ConnUnknown, false, r
	}
	return t.m.conn[v], t.m.origIsDst[v], r
}

// QueryValue returns the raw machine value stored for a flow hash.
func (t *Tracker) QueryValue(h uint64) (uint16, Result) {
	v, r, _ := t.st.lookup(h)
	return uint16(v), r
}

// ValueState maps a machine value to its conn_state and orientation.
func (t *Tracker) ValueState(v uint16) (ConnState, bool) {
	if int(v) >= t.m.values {
		return ConnUnknown, false
	}
	return t.m.conn[v], t.m.origIsDst[v]
}

// Flush ages the backend to packet time now (the end of a trace): flows
// idle past their timeout expire. Live flows stay queryable.
func (t *Tracker) Flush(now time.Time) {
	t.st.rotate(now.UnixNano())
	if t.shadow != nil {
		t.shadow.rotate(now.UnixNano())
	}
	t.publish()
}
