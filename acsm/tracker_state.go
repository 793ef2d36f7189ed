package acsm

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sync/atomic"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/hashmix"
	"github.com/flowmon/flowmon/internal/snapshot"
)

// Tracker state format, version 1 (little-endian):
//
//	"ACSM" 1           tag and version
//	params             the configuration that shapes the stores (backend,
//	                   machine, capacity, error rate, timeouts, ...), the
//	                   machine's value count and a digest of its tables,
//	                   and a digest of the flow hash on fixed inputs
//	counters           every counter of Counts, Stats and Samples: 8 bytes
//	                   each, in the order of (*counters).fields; those
//	                   taken from the stores (derivedNames) must agree
//	                   with the stores that follow
//	8 + store          the main store (below), length first
//	1 [8 + store]      whether a shadow follows, and its store
//
// A store is
//
//	1 8 8 8            aging started; next rotation (ns); expired; failed
//	3 x (8 8 1 8)      each tier's ring: live flows of both generations,
//	                   the current one, its start (ns)
//	n x (8 + backend)  every backend, length first, tier by tier and
//	                   generation by generation (one for dleft or no aging)
//
// and a backend is its own state (backend_state.go). Values stored are
// the machine's value numbers, which is why the machine's tables are part
// of the params: a build whose machine numbers its values differently
// refuses the snapshot instead of reading every flow's state wrong.
const (
	trackerTag   = "ACSM"
	trackerState = 1
)

// probeFlow is a fixed flow whose hash pins capture's flow hash in the
// params: the stores are keyed by it.
var probeFlow = capture.Key{Src: netip.MustParseAddr("192.0.2.1"), Dst: netip.MustParseAddr("198.51.100.2"),
	SrcPort: 40000, DstPort: 443, Proto: capture.ProtoTCP}

// hashDigest condenses the hash functions the stores depend on.
func hashDigest() string {
	const x = 0x0123456789abcdef
	h1, h2 := hashmix.Pair(x, 7)
	s1, s2 := hashmix.Split(x, 7)
	return snapshot.Digest(probeFlow.Hash(), hashmix.Mix(x), h1, h2, s1, s2, hashmix.Reduce(x, 1000003))
}

// digest condenses the machine's tables.
func (m *machine) digest() string {
	w := make([]uint64, 0, len(m.next)+5*m.values+12)
	for _, tr := range m.next {
		w = append(w, uint64(tr.next)|uint64(tr.anomaly)<<16|uint64(b2i(tr.ends))<<32)
	}
	for v := range m.values {
		w = append(w, uint64(m.conn[v]), uint64(m.tier[v]), uint64(b2i(m.origIsDst[v])), uint64(b2i(m.terminal[v])))
	}
	for k := range m.start {
		for d := range m.start[k] {
			w = append(w, uint64(m.start[k][d][0]), uint64(m.start[k][d][1]))
		}
	}
	return snapshot.Digest(w...)
}

// stateParams is what a restored state must agree on: the configuration
// that shapes the stores or the meaning of their contents. Settings a
// backend ignores are left out, so that changing them does not throw a
// snapshot away.
func (t *Tracker) stateParams() []snapshot.Param {
	c := t.cfg
	P := snapshot.P
	ps := []snapshot.Param{P("backend", c.Backend), P("machine", c.Machine), P("capacity", c.Capacity)}
	switch c.Backend {
	case BackendKBF:
		ps = append(ps, P("fp_rate", c.FPRate), P("kbf_encoder", int(c.KBFEncoder)), P("kbf_layout", int(c.KBFLayout)))
	case BackendSBF, BackendFCF:
		ps = append(ps, P("fp_rate", c.FPRate), P("memory_bytes", c.MemoryBytes))
	case BackendDLeft:
		ps = append(ps, P("memory_bytes", c.MemoryBytes), P("shed_new", c.ShedNew))
	case BackendExact:
		ps = append(ps, P("exact_cap", c.ExactCap))
	}
	ps = append(ps, P("no_aging", c.NoAging))
	if !c.NoAging {
		ps = append(ps, P("timeout_new", c.Timeouts.New), P("timeout_established", c.Timeouts.Established),
			P("timeout_closed", c.Timeouts.Closed))
	}
	shadow := 0
	if t.shadow != nil {
		shadow = c.ShadowRate
	}
	return append(ps, P("keep_ended", c.KeepEnded), P("shadow_rate", shadow), P("seed", c.Seed),
		P("values", t.m.values), P("machine_tables", t.m.tables),
		P("conn_states", int(NumConnStates)), P("anomalies", numAnomalies), P("hash", hashDigest()))
}

// fields lists the counters in their state order.
func (c *counters) fields() (u []*atomic.Uint64, i []*atomic.Int64) {
	var tallied [tallyFields]*atomic.Uint64
	c.tallyOf.fields(&tallied)
	u = append(tallied[:], &c.inserts, &c.insertFails, &c.updates,
		&c.deletes, &c.dontKnow, &c.decodeFails, &c.expired, &c.shed)
	return u, []*atomic.Int64{&c.memory, &c.live, &c.shadowLive}
}

// AppendState appends the tracker's state to b: every flow's stored value
// in the backend (and the shadow), the aging state (the rings'
// generations and clocks, or dleft's cell tags and sweep), and every
// counter, with the configuration they belong to. A tracker restored from
// it with RestoreState answers, ages and counts exactly as this one would
// from here on. Like Observe, it belongs to the tracker's goroutine.
//
// Its size is about the backend's memory: at the default 2^18 flows,
// 1.3 MB for dleft.
func (t *Tracker) AppendState(b []byte) ([]byte, error) {
	b = snapshot.AppendTag(b, trackerTag, trackerState)
	b = snapshot.AppendParams(b, t.stateParams())
	t.publish()
	u, i := t.c.fields()
	for _, x := range u {
		b = binary.LittleEndian.AppendUint64(b, x.Load())
	}
	for _, x := range i {
		b = binary.LittleEndian.AppendUint64(b, uint64(x.Load()))
	}
	b, err := snapshot.AppendBlob(b, t.st.appendState)
	if err != nil {
		return b, fmt.Errorf("save acsm tracker: %w", err)
	}
	b = snapshot.AppendBool(b, t.shadow != nil)
	if t.shadow != nil {
		if b, err = snapshot.AppendBlob(b, t.shadow.appendState); err != nil {
			return b, fmt.Errorf("save acsm tracker shadow: %w", err)
		}
	}
	return b, nil
}

// RestoreState replaces the tracker's state with the one AppendState
// wrote in b. It is meant for a tracker just built by New with the
// configuration the state was saved with: a state of another shape is
// refused with an error wrapping snapshot.ErrIncompatible that names the
// first parameter that differs ("snapshot has capacity 65536, configured
// 131072"), a malformed one with snapshot.ErrDamaged. On error the
// tracker is unchanged. The state is decoded into stores built afresh and
// swapped in only when all of it is good, so for a moment the tracker's
// memory is held twice.
func (t *Tracker) RestoreState(b []byte) error {
	d := snapshot.NewDecoder("acsm tracker", b)
	d.Tag(trackerTag, trackerState)
	d.Params(t.stateParams())
	u, i := t.c.fields()
	us := make([]uint64, len(u))
	for k := range us {
		us[k] = d.U64()
	}
	is := make([]int64, len(i))
	for k := range is {
		is[k] = d.I64()
	}
	main := d.Blob()
	var shadow []byte
	if hasShadow := d.Bool(); hasShadow != (t.shadow != nil) && d.Err() == nil {
		d.Failf("shadow %t in the state, %t in the tracker", hasShadow, t.shadow != nil)
	} else if hasShadow {
		shadow = d.Blob()
	}
	if err := d.Done(); err != nil {
		return err
	}
	fresh, err := New(t.cfg)
	if err != nil {
		return fmt.Errorf("restore acsm tracker: %w", err)
	}
	if err := fresh.st.restoreState(main); err != nil {
		return fmt.Errorf("restore acsm tracker: %w", err)
	}
	if t.shadow != nil {
		if err := fresh.shadow.restoreState(shadow); err != nil {
			return fmt.Errorf("restore acsm tracker shadow: %w", err)
		}
	}
	if err := checkDerived(fresh, us[tallyFields:], is); err != nil {
		return err
	}
	t.st, t.shadow = fresh.st, fresh.shadow
	for k, x := range u {
		x.Store(us[k])
	}
	for k, x := range i {
		x.Store(is[k])
	}
	t.own = t.c.tally()
	return nil
}

// derivedNames name the counters after the tally, in state order: the
// stores' statistics, memory and live flows, which publish sets from the
// stores rather than counts.
var derivedNames = [...]string{"inserts", "insert_failures", "updates", "deletes", "dont_know",
	"decode_failures", "expired", "shed", "memory_bytes", "live", "shadow_live"}

// checkDerived checks the counters the state holds beside its stores
// (u after the tally, and i) against what fresh's restored stores give.
// AppendState publishes them from the stores first, so in a state it
// wrote they agree; a state where they differ would be read, then
// replaced at the next publish, and encode to other bytes: it is damaged.
func checkDerived(fresh *Tracker, u []uint64, i []int64) error {
	fresh.publish()
	fu, fi := fresh.c.fields()
	var got, want [len(derivedNames)]int64
	for k, x := range fu[tallyFields:] {
		got[k], want[k] = int64(u[k]), int64(x.Load())
	}
	for k, x := range fi {
		got[len(u)+k], want[len(u)+k] = i[k], x.Load()
	}
	for k := range got {
		if got[k] != want[k] {
			return fmt.Errorf("restore acsm tracker: %s %d in the counters, %d in the stores: %w",
				derivedNames[k], got[k], want[k], snapshot.ErrDamaged)
		}
	}
	return nil
}

// tally is the owner's tally the published counters hold.
func (c *counters) tally() tally {
	var o tally
	var pub [tallyFields]*atomic.Uint64
	var own [tallyFields]*uint64
	c.tallyOf.fields(&pub)
	o.fields(&own)
	for i, x := range pub {
		*own[i] = x.Load()
	}
	return o
}

// appendState appends the store's state (see the format above).
func (s *store) appendState(b []byte) ([]byte, error) {
	b = snapshot.AppendBool(b, s.started)
	for _, x := range [...]uint64{uint64(s.next), s.expired, s.failed} {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	for r := range s.rings {
		ring := &s.rings[r]
		b = binary.LittleEndian.AppendUint64(b, uint64(ring.live[0]))
		b = binary.LittleEndian.AppendUint64(b, uint64(ring.live[1]))
		b = append(b, byte(ring.cur))
		b = binary.LittleEndian.AppendUint64(b, uint64(ring.start))
	}
	var err error
	s.each(func(be Backend) {
		if err == nil {
			b, err = snapshot.AppendBlob(b, func(b []byte) ([]byte, error) { return appendBackend(b, be) })
		}
	})
	return b, err
}

// restoreState fills a freshly built store from b.
func (s *store) restoreState(b []byte) error {
	d := snapshot.NewDecoder("acsm store", b)
	s.started = d.Bool()
	s.next, s.expired, s.failed = d.I64(), d.U64(), d.U64()
	for r := range s.rings {
		ring := &s.rings[r]
		ring.live[0], ring.live[1] = d.I64(), d.I64()
		if ring.cur = int(d.U8()); ring.cur > 1 {
			d.Failf("tier %s: current generation %d", Tier(r), ring.cur)
		}
		ring.start = d.I64()
	}
	s.each(func(be Backend) {
		blob := d.Blob()
		if d.Err() == nil {
			d.Fail(restoreBackend(be, blob, s.m.values))
		}
	})
	return d.Done()
}
