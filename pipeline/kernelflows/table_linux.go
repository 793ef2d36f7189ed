//go:build linux

package kernelflows

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf/ringbuf"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/bpf"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/pipeline/flowcount"
	"github.com/flowmon/flowmon/pipeline/flowtable"
	"github.com/flowmon/flowmon/record"
)

// Table is the user-space side of the kernel's flow state: it loads the
// program and its maps, reads its events and sweeps its cells, and
// writes the records. One goroutine uses it; Stats and Close may be
// called from any.
type Table struct {
	key    loadKey
	st     *bpf.State
	rd     *ringbuf.Reader
	rb     ringbuf.Record
	ev     bpf.Event
	tables acsm.Tables
	out    flowtable.Out
	events func(*record.Event)
	rec    record.Flow  // a start's, or every record's without out
	fev    record.Event // what events is called with
	cells  int
	buf    []byte // Run's scratch
	// dgram and dbuf are TakeDatagram's frame and Run's scratch: a live
	// table's datagrams come from the source's goroutine, beside the
	// one that reads the events. datagrams counts those run.
	dgram, dbuf  []byte
	datagrams    atomic.Uint64
	datagramErrs atomic.Uint64

	idleNew, idleEst, linger int64
	attempt                  int64 // 0: no attempt delay
	// ended flows wait linger for their stragglers, oldest first, from
	// ended[endedHead].
	ended     []endedFlow
	endedHead int
	// nextSweep is the packet time of the next sweep over the cells, set
	// at the first packet (sweepSet): a packet time may be negative (a
	// frame without a timestamp reads as the zero time.Time).
	nextSweep int64
	sweepSet  bool
	// counts, when set, takes the program's packet counts every
	// countEvery (nextCount); counted and dups are what it was given.
	counts        func(packets, duplicates uint64, now int64)
	nextCount     int64
	counted, dups uint64
	// counter, when set, takes each flow's packets per window (rotate).
	counter    *flowcount.Counter
	winCounted map[[capture.KeySize]byte]winCount
	// due is the sweep's keys, kept from one sweep to the next.
	due    [][capture.KeySize]byte
	now    int64 // the clock: the latest packet time, once nowSet
	nowSet bool

	byState [256]uint64
	states  map[string]uint64
	stats   Stats

	// live is a live run's table (NewLive): its times are the kernel's
	// monotonic clock, and off (wall clock minus monotonic, ns) moves
	// them to the records' wall clock; a replay's are packet times, off 0.
	live bool
	off  int64

	// mu guards pub, the stats as last published for Stats, and closed.
	mu     sync.Mutex
	pub    Stats
	closed bool
}

type endedFlow struct {
	key    [capture.KeySize]byte
	starts uint32
	at     int64
}

// sweepEvery is how often (packet time) the cells are swept for flows
// idle past their timeout that no packet came to end: as long as the
// user-space table takes to pass every slot (flowtable's sweepEvery).
const sweepEvery = int64(10 * time.Second)

// stateOptions are the program's options for c (with its defaults).
func (c Config) stateOptions() bpf.StateOptions {
	return bpf.StateOptions{Cells: c.Cells, EventRing: c.EventRing, Machine: Machine(c.Machine),
		IdleNew: c.IdleNew, IdleEstablished: c.IdleEstablished, Linger: flowtable.Linger, AttemptDelay: c.AttemptDelay,
		ActiveTimeout: c.ActiveTimeout, DedupSlots: c.DedupSlots, DedupWindow: c.DedupWindow,
		DedupPayloadBytes: c.DedupPayloadBytes}
}

// tunnels are the UDP tunnels the program leaves to user space.
func (c Config) tunnels() bpf.Tunnels {
	return bpf.Tunnels{Ports: c.TunnelPorts, Teredo: c.DetectTeredo, AYIYA: c.DetectAYIYA}
}

// New loads the kernel's flow state for c.
func New(c Config) (*Table, error) {
	tables := acsm.MachineTables(c.Machine)
	to := c.withDefaults()
	key := loadKey{machine: c.Machine, cells: to.Cells, ring: to.EventRing, idleNew: to.IdleNew, idleEst: to.IdleEstablished,
		active: to.ActiveTimeout, attempt: to.AttemptDelay, ports: fmt.Sprint(to.tunnels()), dedupSlots: to.DedupSlots, dedupWindow: to.DedupWindow,
		dedupBytes: to.DedupPayloadBytes}
	if t := takeLoaded(key); t != nil {
		t.out, t.events, t.counts, t.counter = to.Out, to.Events, to.Counts, to.Counter
		return t, nil
	}
	st, err := bpf.LoadState(to.stateOptions())
	if err != nil {
		return nil, err
	}
	if err := st.SetTunnels(to.tunnels()); err != nil {
		st.Close()
		return nil, fmt.Errorf("load eBPF flow state: set the tunnels: %w", err)
	}
	rd, err := st.NewEventReader()
	if err != nil {
		st.Close()
		return nil, err
	}
	t := &Table{key: key, st: st, rd: rd, tables: tables, out: to.Out, events: to.Events, counts: to.Counts, counter: to.Counter,
		idleNew: int64(to.IdleNew), idleEst: int64(to.IdleEstablished), attempt: int64(to.AttemptDelay), cells: to.Cells,
		linger: int64(flowtable.Linger), states: map[string]uint64{}}
	return t, nil
}

// Machine is ACSM machine k as the kernel's program steps it: its tables,
// and which values time out as new flows and which are S0.
func Machine(k acsm.MachineKind) bpf.StateMachine {
	t := acsm.MachineTables(k)
	idle := make([]bool, t.Values)
	s0 := make([]bool, t.Values)
	for v := range idle {
		idle[v] = flowtable.IdleNew(t.Conn[v])
		s0[v] = t.Conn[v] == acsm.S0
	}
	return bpf.StateMachine{Next: t.Next, Info: t.Info, Start: t.Start, ServerPorts: t.ServerPorts, IdleNew: idle, S0: s0}
}

// SetCounter has the flows' packets counted per window in c (Config's
// Counter), before the first packet.
func (t *Table) SetCounter(c *flowcount.Counter) { t.counter = c }

// Close releases the program and its maps, or keeps them, emptied, for
// the next New of the same shape in this process (keepLoaded).
func (t *Table) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	if !t.live && t.keep() {
		return nil
	}
	err := t.rd.Close()
	if cerr := t.st.Close(); err == nil {
		err = cerr
	}
	return err
}

// Loading the program takes the verifier most of a second, longer than a
// small capture's replay: a process that replays capture after capture
// (the tests that check every capture) keeps one loaded program of each
// shape, emptied between runs.
type loadKey struct {
	machine                  acsm.MachineKind
	cells, ring              int
	idleNew, idleEst, active time.Duration
	attempt                  time.Duration
	ports                    string
	dedupSlots, dedupBytes   int
	dedupWindow              time.Duration
}

var loaded struct {
	sync.Mutex
	m map[loadKey]*Table
}

func takeLoaded(k loadKey) *Table {
	loaded.Lock()
	defer loaded.Unlock()
	t := loaded.m[k]
	delete(loaded.m, k)
	return t
}

// keep empties t and keeps it for the next New of its shape, if none is
// kept yet.
func (t *Table) keep() bool {
	if t.st.ClearCells() != nil || t.st.ClearDedup() != nil || t.st.ResetCounters() != nil {
		return false
	}
	t.rd.SetDeadline(time.Now())
	for t.rd.ReadInto(&t.rb) == nil {
	}
	loaded.Lock()
	defer loaded.Unlock()
	if loaded.m[t.key] != nil {
		return false
	}
	if loaded.m == nil {
		loaded.m = map[loadKey]*Table{}
	}
	k := &Table{key: t.key, st: t.st, rd: t.rd, tables: t.tables, cells: t.cells, idleNew: t.idleNew, idleEst: t.idleEst, attempt: t.attempt,
		linger: t.linger, states: map[string]uint64{}}
	loaded.m[t.key] = k
	return true
}

// TakeFrame runs one frame through the program at its packet time and
// reports whether the program took it: a frame of a flow it keeps, or a
// new flow's that found its map full (counted). What it leaves (tunnels,
// fragments, frames it does not parse) is user space's to decode. Only
// Ethernet frames are taken; another link type is an error.
func (t *Table) TakeFrame(f *capture.Frame) (bool, error) {
	if f.Link != capture.LinkEthernet {
		return false, fmt.Errorf("the kernel flow state takes Ethernet frames, and this capture has link type %d: "+
			"replay it without --flow-state kernel", f.Link)
	}
	return t.take(f.Data, f.Time.UnixNano())
}

// TakeDatagram runs a datagram reassembled from fragments the program
// left (capture.DatagramTaker) through it, in an Ethernet frame of its
// own, so that the datagram's flow, whose other packets may be whole,
// is kept in its cell. A live table runs it at its last fragment's time
// (ts) on the monotonic clock, the live programs' time; it may be called
// beside ReadEvents and Tick.
func (t *Table) TakeDatagram(ip []byte, ts time.Time) (bool, error) {
	if len(ip) == 0 {
		return false, nil
	}
	f := append(t.dgram[:0], make([]byte, 12)...) // no addresses: the flow's key has none
	if ip[0]>>4 == 6 {
		f = append(f, 0x86, 0xdd)
	} else {
		f = append(f, 0x08, 0x00)
	}
	f = append(f, ip...)
	t.dgram = f
	if t.live {
		return t.kept(t.st.Run(f, monoNow()-int64(time.Since(ts)), &t.dbuf)), nil
	}
	t.datagrams.Add(1)
	return t.take(f, ts.UnixNano())
}

// kept says whether a live table's datagram run kept the datagram. A
// run that fails leaves the datagram to user space, as the program leaves
// a frame it cannot keep: counted, not fatal to the source.
func (t *Table) kept(v bpf.Verdict, err error) bool {
	if err != nil {
		t.datagramErrs.Add(1)
		return false
	}
	t.datagrams.Add(1)
	return v != bpf.Whole
}

// take runs frame through the program at packet time now.
func (t *Table) take(frame []byte, now int64) (bool, error) {
	if err := t.rotate(now); err != nil {
		return false, err
	}
	v, err := t.st.Run(frame, now, &t.buf)
	if err != nil {
		return false, err
	}
	if err := t.readEvents(); err != nil {
		return false, err
	}
	if err := t.advance(now); err != nil {
		return false, err
	}
	return v != bpf.Whole, nil
}

// readEvents handles the events the program has sent, without waiting.
func (t *Table) readEvents() error {
	if t.rd.AvailableBytes() == 0 {
		return nil
	}
	t.rd.SetDeadline(time.Now())
	for {
		err := t.rd.ReadInto(&t.rb)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the eBPF flow events: %w", err)
		}
		if err := bpf.ParseEvent(t.rb.RawSample, &t.ev); err != nil {
			return err
		}
		t.event(&t.ev)
	}
}

func (t *Table) event(e *bpf.Event) {
	t.stats.Events++
	switch e.Type {
	case bpf.EventStart:
		t.started(&e.Key, &e.Cell)
	case bpf.EventEnd:
		t.ended = append(t.ended, endedFlow{key: e.Key, starts: e.Starts, at: e.Since})
	case bpf.EventDone:
		why := record.EndOfFlow
		if e.Reason == bpf.ReasonIdle {
			why = record.EndIdle
		}
		t.write(&e.Key, &e.Cell, why, true)
	case bpf.EventInterim:
		t.write(&e.Key, &e.Cell, record.EndActive, false)
	case bpf.EventAnswered:
		t.answered(&e.Key, &e.Cell)
	}
}

// advance moves the table's clock to now (packet time, UnixNano): the
// flows whose linger is over get their records, and every sweepEvery the
// cells are swept for flows idle past their timeout.
func (t *Table) advance(now int64) error {
	// The table ages by the latest packet time, as the program and the
	// user-space table do: a packet whose time goes back is at it.
	if !t.nowSet || now > t.now {
		t.now, t.nowSet = now, true
	}
	now = t.now
	for t.endedHead < len(t.ended) && now-t.ended[t.endedHead].at >= t.linger {
		if err := t.flushEnded(&t.ended[t.endedHead]); err != nil {
			return err
		}
		t.endedHead++
	}
	// The queue moves down once half of it is done: each flow is moved
	// a bounded number of times, where moving the rest at every flush
	// would cost a busy link's tens of thousands of lingering flows at
	// every packet.
	if t.endedHead > 0 && t.endedHead >= len(t.ended)/2 {
		t.ended = append(t.ended[:0], t.ended[t.endedHead:]...)
		t.endedHead = 0
	}
	if !t.sweepSet {
		t.nextSweep, t.sweepSet = now+sweepEvery, true
		t.nextCount = now + countEvery
	}
	if t.counts != nil && now >= t.nextCount {
		t.nextCount = now + countEvery
		if err := t.passCounts(now); err != nil {
			return err
		}
	}
	if now >= t.nextSweep {
		t.nextSweep = now + sweepEvery
		return t.sweep(now, false)
	}
	return nil
}

// The flow counter's windows (Config.Counter): a flow's packets in a
// window are added to it when the window ends, for the flows the cells
// hold then, or when the flow's final record is written, as the
// user-space table adds each flow's packets of the window (flowtable's
// flushCount). The cells count every packet of their flow; winCounted
// keeps, for a flow open when a window ended, the packets already added,
// so that only those since go to the next. Only flows open across a
// window's end have an entry, and their final record removes it: at most
// one a cell.
type winCount struct {
	starts uint32
	pkts   uint64
}

// rotate ends the flow counter's window when now (the table's clock) is
// past it: the packets each open flow sent since its last count go to
// the ending window first.
func (t *Table) rotate(now int64) error {
	at := time.Unix(0, now+t.off)
	if t.counter == nil || !t.counter.Due(at) {
		return nil
	}
	if t.winCounted == nil {
		t.winCounted = map[[capture.KeySize]byte]winCount{}
	}
	err := t.st.Cells(func(key [capture.KeySize]byte, c bpf.Cell) bool {
		t.count(&key, &c)
		t.winCounted[key] = winCount{starts: c.Starts, pkts: c.Pkts[0] + c.Pkts[1]}
		return true
	})
	t.counter.Rotate(at)
	return err
}

// countFinal adds the packets of the flow in c, whose final record is
// written, that no window has counted yet.
func (t *Table) countFinal(key *[capture.KeySize]byte, c *bpf.Cell) {
	if t.counter == nil {
		return
	}
	t.count(key, c)
	delete(t.winCounted, *key)
}

// count adds to the counter's window the packets of the flow in c that
// no window has counted yet.
func (t *Table) count(key *[capture.KeySize]byte, c *bpf.Cell) {
	n := c.Pkts[0] + c.Pkts[1]
	if w, ok := t.winCounted[*key]; ok && w.starts == c.Starts {
		n -= min(n, w.pkts)
	}
	if n > 0 {
		var k capture.Key
		_ = k.UnmarshalBinary(key[:])
		t.counter.AddN(k.Hash(), n)
	}
}

// countEvery is how often (packet time) Config.Counts is given the
// program's packet counts: as often as the rules' shards publish theirs.
const countEvery = int64(time.Second)

// passCounts gives Config.Counts the packets and duplicates the program
// counted since the last call.
func (t *Table) passCounts(now int64) error {
	pc, err := t.st.Counters()
	if err != nil {
		return err
	}
	t.counts(pc.Counted-t.counted, pc.Duplicates-t.dups, now+t.off)
	t.counted, t.dups = pc.Counted, pc.Duplicates
	return nil
}

// flushEnded writes the record of an ended flow whose linger is over, if
// its cell still holds it (a packet after the linger has replaced it, and
// sent it up done, otherwise).
func (t *Table) flushEnded(f *endedFlow) error {
	c, ok, err := t.st.Lookup(f.key)
	if err != nil || !ok || c.Starts != f.starts {
		return err
	}
	if c, ok, err = t.st.Take(f.key); err != nil || !ok {
		return err
	}
	t.stats.taken++
	t.write(&f.key, &c, record.EndOfFlow, true)
	return nil
}

// sweep writes the records of the flows idle past their timeout (all
// flows, when final) and removes their cells. An ended flow is left to
// its linger, unless its end event was lost or final is set.
func (t *Table) sweep(now int64, final bool) error {
	due := t.due[:0]
	err := t.st.Cells(func(key [capture.KeySize]byte, c bpf.Cell) bool {
		if final || t.idle(&c, now) {
			due = append(due, key)
		}
		return true
	})
	t.due = due
	if err != nil {
		return err
	}
	for i := range due {
		c, ok, err := t.st.Take(due[i])
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		t.stats.taken++
		why := record.EndIdle
		switch {
		case c.Ended:
			why = record.EndOfFlow
		case final:
			why = record.EndForced
		default:
			t.stats.TimedOut++
		}
		t.write(&due[i], &c, why, true)
	}
	return nil
}

// idle reports whether the flow in c is over at now: idle past its
// timeout, an unanswered attempt past its delay, or ended and past its
// linger.
func (t *Table) idle(c *bpf.Cell, now int64) bool {
	if c.Ended {
		return now-c.Since >= t.linger+sweepEvery // its end event was lost
	}
	to := t.idleEst
	switch {
	case c.Attempt && t.attempt > 0:
		to = t.attempt
	case flowtable.IdleNew(t.tables.Conn[c.Value]):
		to = t.idleNew
	}
	return now >= c.Since+to
}

// Finish writes the records of every flow the cells hold: the ended ones
// as ended, the others as open at the end (record.EndForced).
func (t *Table) Finish() error {
	if err := t.readEvents(); err != nil {
		return err
	}
	for i := t.endedHead; i < len(t.ended); i++ {
		if err := t.flushEnded(&t.ended[i]); err != nil {
			return err
		}
	}
	t.ended, t.endedHead = t.ended[:0], 0
	if t.counts != nil {
		if err := t.passCounts(t.now); err != nil {
			return err
		}
	}
	if err := t.sweep(t.now, true); err != nil {
		return err
	}
	for s, n := range t.byState {
		if n > 0 {
			t.states[acsm.ConnState(s).String()] += n
		}
	}
	t.byState = [256]uint64{}
	t.publish()
	return nil
}

// publish makes the table's counts what Stats returns.
func (t *Table) publish() {
	t.mu.Lock()
	t.pub = t.stats
	t.mu.Unlock()
}

// States is the flows by final conn_state, filled by Finish.
func (t *Table) States() map[string]uint64 { return t.states }

// write writes the record of the flow in c, keyed key, for why; final
// says it is the flow's last record (not an interim one).
func (t *Table) write(key *[capture.KeySize]byte, c *bpf.Cell, why record.EndReason, final bool) {
	state := t.tables.Conn[t.value(c)]
	if final {
		t.byState[state]++
		t.stats.Records++
		t.countFinal(key, c)
	}
	if t.out == nil && t.events == nil {
		return
	}
	f := &t.rec
	if t.out != nil {
		f = t.out.Next()
	}
	t.fill(f, key, c)
	f.EndReason = why
	if c.Ended {
		f.EndReason = record.EndOfFlow
	}
	if t.events != nil {
		t.fev.Kind, t.fev.Flow, t.fev.Anomalies, t.fev.Novel = record.FlowEnded, f, acsm.Anomaly(c.Anomalies), false
		if !final {
			t.fev.Kind = record.FlowInterim
		}
		t.events(&t.fev)
	}
}

// started tells the consumers of a flow's start.
func (t *Table) started(key *[capture.KeySize]byte, c *bpf.Cell) {
	t.tell(record.FlowStarted, key, c)
}

// answered tells the consumers that a flow left S0.
func (t *Table) answered(key *[capture.KeySize]byte, c *bpf.Cell) {
	t.stats.Answered++
	t.tell(record.FlowAnswered, key, c)
}

// tell calls the consumers with an event of kind about the flow in c,
// keyed key, as it stands.
func (t *Table) tell(kind record.EventKind, key *[capture.KeySize]byte, c *bpf.Cell) {
	if t.events == nil {
		return
	}
	t.fill(&t.rec, key, c)
	t.fev.Kind, t.fev.Flow, t.fev.Anomalies, t.fev.Novel = kind, &t.rec, acsm.Anomaly(c.Anomalies), false
	t.events(&t.fev)
}

func (t *Table) value(c *bpf.Cell) uint16 {
	if int(c.Value) >= len(t.tables.Conn) {
		return 0
	}
	return c.Value
}

// fill sets f from the flow in c, keyed key, as flowtable's write does
// from a slot: directed from the originator, the conn.log fields by
// flowtable.Conn.Fill, the uid by flowtable.UIDSeed.
func (t *Table) fill(f *record.Flow, key *[capture.KeySize]byte, c *bpf.Cell) {
	v := t.value(c)
	var k capture.Key
	_ = k.UnmarshalBinary(key[:])
	origIsDst := t.tables.Info[v]&acsm.InfoOrigIsDst != 0
	conn, _ := flowtable.ConnFromBytes(c.Conn[:])
	h := k.Hash()
	first := c.First + t.off
	*f = record.Flow{Start: first, End: c.Last + t.off, Hash: h, Proto: k.Proto, State: t.tables.Conn[v], Confidence: 1,
		UID:  flowtable.UIDSeed(h, first, c.FirstSeq, c.FirstAck, c.FirstIPID, capture.TCPFlags(c.FirstFlags)),
		Orig: k.Src, OrigPort: k.SrcPort, Resp: k.Dst, RespPort: k.DstPort, OrigPkts: c.Pkts[0], RespPkts: c.Pkts[1]}
	if origIsDst {
		f.Orig, f.OrigPort, f.Resp, f.RespPort = k.Dst, k.DstPort, k.Src, k.SrcPort
		f.OrigPkts, f.RespPkts = c.Pkts[1], c.Pkts[0]
	}
	conn.Fill(f, k.Proto, origIsDst)
}

// Stats returns the table's counts as last published (at Finish; in a
// live run after each read of the events) and the program's.
func (t *Table) Stats() (Stats, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return t.pub, errors.New("read the kernel flow state's counts: closed")
	}
	s := t.pub
	pc, err := t.st.Counters()
	if err != nil {
		return s, err
	}
	s.Started = pc.NewFlows
	s.Seen, s.Counted, s.Duplicates, s.Whole, s.InsertFailed = pc.Seen, pc.Counted, pc.Duplicates, pc.Whole+pc.Skipped, pc.InsertFailed
	for _, n := range pc.Reasons {
		s.Malformed += n
	}
	s.EventsLost, s.RecordsLost = pc.EventsLost, pc.RecordsLost
	s.Datagrams, s.DatagramErrors = t.datagrams.Load(), t.datagramErrs.Load()
	s.EventsSent = pc.NewFlows + pc.Ended + pc.Done + pc.Interims
	s.Cells = t.cells
	s.MemoryBytes = t.st.MemoryBytes()
	// Each new flow enters a cell, or takes over a done flow's (DONE);
	// the records written from the cells took theirs out.
	if made := pc.NewFlows - pc.Done; made > s.taken {
		s.CellsInUse = made - s.taken
	}
	return s, nil
}
