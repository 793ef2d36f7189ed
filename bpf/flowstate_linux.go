//go:build linux

package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
)

// The kernel flow state (flowstate.c): the program keeps each flow's
// state, counts and conn.log fields in a cell of a fixed-size map, ages
// it in packet time as the user-space flow table does, and sends only
// flow events up, each with the whole cell.

// StateMachine is an ACSM machine as the program steps it: acsm.Tables'
// arrays (the caller converts, so that this package stays a leaf).
type StateMachine struct {
	Next []uint16 // [value*256+input], bit 15: the transition ends the flow
	Info []uint8  // [value]: bit 0 origIsDst, bit 1 terminal, bit 2 closed (bits 3 and 4 are IdleNew's and S0's)
	// IdleNew, when set (one per value), says a flow at that value
	// times out after StateOptions.IdleNew: conn states S0, SH, SHR and
	// unknown (from acsm.Tables.Conn). Without it every flow times out
	// after IdleEstablished.
	IdleNew []bool
	// S0, when set (one per value), says which values have conn state
	// S0: a flow whose value leaves them sends EventAnswered. Without it
	// no flow does.
	S0          []bool
	Start       [3][2][2]uint16
	ServerPorts [1024]uint64
}

// infoIdleNew and infoS0 are the program's INFO_IDLE_NEW and INFO_S0
// bits of Info.
const (
	infoIdleNew = 1 << 3
	infoS0      = 1 << 4
)

// MaxStateValues is the most values a machine may have.
const MaxStateValues = 512

// StateOptions shape a flow state's maps.
type StateOptions struct {
	// Cells is the most flows the map holds (its memory is fixed at load).
	Cells int
	// EventRing is the event ring's size in bytes: a power of two, a
	// multiple of the page size (default 4 MiB).
	EventRing int
	Machine   StateMachine
	// IdleNew is the idle timeout of a flow at a value StateMachine's
	// IdleNew names, IdleEstablished that of the others (flowtable's
	// Config); 0 is none.
	IdleNew, IdleEstablished time.Duration
	// Linger is how long an ended flow waits for its stragglers before
	// its 5-tuple's next packet starts another (default 5 s, flowtable's
	// recordLinger).
	Linger time.Duration
	// AttemptDelay, when set, ends a flow that began with a pure SYN and
	// is still at a value StateMachine's S0 names that long after the
	// SYN, its originator's later packets a new flow (flowtable's
	// AttemptDelay); 0 is none.
	AttemptDelay time.Duration
	// ActiveTimeout, in whole seconds (0: none), gives an open flow an
	// interim event at its first packet that long after its start or its
	// last interim event.
	ActiveTimeout time.Duration
	// DedupSlots is the size of the duplicate window, in fingerprints
	// (0: no duplicate window), rounded up to whole buckets of
	// DedupBucketSlots: pipeline/dedup's fingerprint table, which
	// filters/recent sizes at four keys a bucket over the 1.25 windows a
	// key may be held. A frame whose fingerprint the window holds is
	// counted (StateCounters.Duplicates) and left out of its cell.
	DedupSlots int
	// DedupWindow is how long a fingerprint is held: at least that long,
	// at most a quarter longer (at least 4 ns when DedupSlots is set).
	DedupWindow time.Duration
	// DedupPayloadBytes is how many of a frame's captured payload bytes
	// its fingerprint takes (dedup.Config.PayloadBytes; at most
	// MaxDedupPayload).
	DedupPayloadBytes int
	// Live loads live programs instead of the replay's (Run): LiveXDP's
	// (AttachXDP), LiveTC's (AttachTC) or LiveAll, both. A load verifies
	// only the programs it loads, each about a second of the verifier
	// on a busy machine.
	Live string
	// FrameRing is a live state's ring of the frames left to user space
	// (NewFrameReader), in bytes: a power of two, a multiple of the page
	// size (default 4 MiB). FrameWakeup is how much it holds before the
	// program wakes its reader (default a quarter of it).
	FrameRing, FrameWakeup int
}

// DedupBucketSlots is the fingerprints in one bucket of the duplicate
// window (filters/recent.CellsPerBucket).
const DedupBucketSlots = 15

// MaxDedupPayload is the most payload bytes a fingerprint takes
// (dedup.MaxPayloadBytes).
const MaxDedupPayload = 64

// DefaultLinger is StateOptions.Linger's default: flowtable's linger,
// Zeek's tcp_close_delay.
const DefaultLinger = 5 * time.Second

// noTimeout is the program's "never": the program compares a time's
// distance from another with a timeout, and no distance is larger.
const noTimeout = math.MaxInt64

// State is a loaded flow-state program and its maps. Loaded live, it
// attaches at XDP or TC (AttachXDP, AttachTC) and hands the frames it
// leaves to user space up through its frames ring (NewFrameReader).
type State struct {
	objs  flowstateObjects
	hooks hooks
	// tooLong counts the frames Run did not run for their length.
	tooLong      atomic.Uint64
	dedupBuckets int
}

// stateReplay and stateLive are the programs of a replay's and a live
// state's load: only they are verified. A live load has the replay's
// program too: Run takes the datagrams user space reassembles from the
// fragments the live programs leave.
type stateReplay struct {
	flowstateMaps
	Replay *ebpf.Program `ebpf:"flowmon_state_replay"`
}

type stateLive struct {
	flowstateMaps
	Replay    *ebpf.Program `ebpf:"flowmon_state_replay"`
	XDP       *ebpf.Program `ebpf:"flowmon_state_xdp"`
	TCIngress *ebpf.Program `ebpf:"flowmon_state_tc_ingress"`
	TCEgress  *ebpf.Program `ebpf:"flowmon_state_tc_egress"`
}

type stateLiveXDP struct {
	flowstateMaps
	Replay *ebpf.Program `ebpf:"flowmon_state_replay"`
	XDP    *ebpf.Program `ebpf:"flowmon_state_xdp"`
}

type stateLiveTC struct {
	flowstateMaps
	Replay    *ebpf.Program `ebpf:"flowmon_state_replay"`
	TCIngress *ebpf.Program `ebpf:"flowmon_state_tc_ingress"`
	TCEgress  *ebpf.Program `ebpf:"flowmon_state_tc_egress"`
}

// StateOptions.Live's hooks.
const (
	LiveXDP = "xdp"
	LiveTC  = "tc"
	LiveAll = "all"
)

// ConnBytes is the size of Cell.Conn: flowtable.Conn's.
const ConnBytes = 152

// Cell is one flow's state as the program keeps it. Sides are indexed by
// the key's direction: 0 sent by the key's Src.
type Cell struct {
	// Value is the machine's value for the flow's record: after the end,
	// the one it ended at (stragglers do not change it).
	Value uint16
	// Ended says the flow ended (its END event was sent), at Since; its
	// record is due after the linger, with the stragglers counted.
	Ended bool
	// Answered says the flow's value left S0 (its ANSWERED event was
	// sent).
	Answered bool
	// Attempt says the flow began with a pure SYN and is still at S0: it
	// ends StateOptions.AttemptDelay after First.
	Attempt     bool
	First, Last int64 // packet times, nanoseconds
	// Since is the time on the program's clock (the latest packet time
	// it has seen) that the flow's timeout counts from: its end's when
	// Ended (the linger), its SYN's for an Attempt (the attempt delay),
	// else its last packet's (the idle timeouts).
	Since int64
	Pkts  [2]uint64
	// Conn is the flow's conn.log fields, in flowtable.Conn's memory
	// layout (flowtable.ConnFromBytes reads it).
	Conn [ConnBytes]byte
	// The first packet's sequence and ack numbers, IP id and TCP flags,
	// 0 where it has none (flowtable.UIDSeed's inputs).
	FirstSeq, FirstAck, FirstIPID uint32
	FirstFlags                    uint16
	// Anomalies are the flag anomalies the flow's packets showed, as
	// acsm.Anomaly's bits: syn_fin, syn_rst, fin_rst, null and xmas only
	// (the stateful three are the machine's transitions', which
	// StateMachine does not carry).
	Anomalies uint16
	// Starts is the flows the cell has held, this one included; InterimAt
	// the seconds after First of the last INTERIM event.
	Starts, InterimAt uint32
}

// Event types.
const (
	// EventStart: a new flow, after its first packet.
	EventStart = 1
	// EventEnd: the packet ended the flow. Its record is due after the
	// linger, from the cell (State.Take), so that stragglers count.
	EventEnd = 2
	// EventDone: the flow is over (Event.Reason says why) and the cell
	// now holds another; the event carries its final state, and its
	// record is due now.
	EventDone = 3
	// EventInterim: an open flow's active timeout; the event carries its
	// state so far.
	EventInterim = 4
	// EventAnswered: the packet moved the flow from a value of conn
	// state S0 (StateMachine.S0) to one of another state: the flow was
	// answered (or reset). Sent once a flow, before an EventEnd of the
	// same packet; the event carries the state after the packet.
	EventAnswered = 5
)

// EventDone's reasons (0 for the other events).
const (
	// ReasonReused: a SYN after a side closed starts a new flow of the
	// 5-tuple (record.EndOfFlow).
	ReasonReused = 1
	// ReasonIdle: the open flow was idle past its timeout (record.EndIdle).
	ReasonIdle = 2
	// ReasonLinger: the flow had ended and its linger was over
	// (record.EndOfFlow).
	ReasonLinger = 3
)

// Event is a flow event. A full ring loses events (StateCounters.
// EventsLost); the flows' records still come from the cells, which user
// space sweeps, so a lost START, END or INTERIM costs only timeliness. A
// lost DONE costs the old flow's record: the cell was reset for the new
// one (StateCounters.RecordsLost counts them).
type Event struct {
	Type, Reason uint8
	Key          [40]byte
	Cell
}

// EventSize is the size of a flow event in the ring.
const EventSize = int(unsafe.Sizeof(flowstateFlowEvent{}))

// StateCounters are the program's counts, summed over the CPUs: every
// frame once in Seen and once more in exactly one of Counted, Skipped,
// Duplicates, Whole, InsertFailed or Reasons. NewFlows, Ended, Done,
// Interims and Answered count the events made, EventsLost those the full
// ring refused and RecordsLost the DONE events among them.
type StateCounters struct {
	Seen, Counted, Skipped, Whole, InsertFailed uint64
	// Duplicates is the frames the duplicate window held: not applied to
	// their cells (Run's verdict: Kept, as they were handled).
	Duplicates                                uint64
	NewFlows, Ended, Done, Interims, Answered uint64
	EventsLost, RecordsLost                   uint64
	Reasons                                   [16]uint64
}

// LoadState loads the flow-state program and its maps, attached nowhere.
func LoadState(opt StateOptions) (*State, error) {
	if opt.Cells < 1 {
		return nil, fmt.Errorf("load eBPF flow state: %d cells: want 1 or more", opt.Cells)
	}
	if opt.EventRing == 0 {
		opt.EventRing = 4 << 20
	}
	m := &opt.Machine
	if len(m.Info) == 0 || len(m.Info) > MaxStateValues || len(m.Next) != len(m.Info)*256 {
		return nil, fmt.Errorf("load eBPF flow state: a machine of %d values and %d transitions: want 1 to %d values, 256 transitions each",
			len(m.Info), len(m.Next), MaxStateValues)
	}
	if len(m.IdleNew) != 0 && len(m.IdleNew) != len(m.Info) {
		return nil, fmt.Errorf("load eBPF flow state: IdleNew of %d values, the machine %d", len(m.IdleNew), len(m.Info))
	}
	if len(m.S0) != 0 && len(m.S0) != len(m.Info) {
		return nil, fmt.Errorf("load eBPF flow state: S0 of %d values, the machine %d", len(m.S0), len(m.Info))
	}
	if opt.IdleNew < 0 || opt.IdleEstablished < 0 || opt.Linger < 0 || opt.ActiveTimeout < 0 || opt.AttemptDelay < 0 {
		return nil, fmt.Errorf("load eBPF flow state: timeouts idle new %v, established %v, linger %v, active %v, attempt %v: want 0 or more",
			opt.IdleNew, opt.IdleEstablished, opt.Linger, opt.ActiveTimeout, opt.AttemptDelay)
	}
	if opt.Linger == 0 {
		opt.Linger = DefaultLinger
	}
	if opt.DedupSlots < 0 || (opt.DedupSlots > 0 && opt.DedupWindow < 4) || opt.DedupPayloadBytes < 0 ||
		opt.DedupPayloadBytes > MaxDedupPayload {
		return nil, fmt.Errorf("load eBPF flow state: duplicate window of %d slots, %v, %d payload bytes: want 0 slots or a window of at least 4 ns, and 0 to %d bytes",
			opt.DedupSlots, opt.DedupWindow, opt.DedupPayloadBytes, MaxDedupPayload)
	}
	buckets := (opt.DedupSlots + DedupBucketSlots - 1) / DedupBucketSlots
	if buckets > 1<<24 {
		return nil, fmt.Errorf("load eBPF flow state: a duplicate window of %d slots: want at most %d", opt.DedupSlots, (1<<24)*DedupBucketSlots)
	}
	switch opt.Live {
	case "", LiveXDP, LiveTC, LiveAll:
	default:
		return nil, fmt.Errorf("load eBPF flow state: live %q must be %s, %s or %s", opt.Live, LiveXDP, LiveTC, LiveAll)
	}
	if opt.Live == "" {
		opt.FrameRing = os.Getpagesize() // unused: the smallest ring
	} else if opt.FrameRing == 0 {
		opt.FrameRing = 4 << 20
	}
	if fr := opt.FrameRing; fr < os.Getpagesize() || fr&(fr-1) != 0 || fr > 1<<30 {
		return nil, fmt.Errorf("load eBPF flow state: frame ring %d: want a power of two from %d (a page) to %d", fr, os.Getpagesize(), 1<<30)
	}
	if opt.FrameWakeup == 0 {
		opt.FrameWakeup = opt.FrameRing / 4
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("load eBPF flow state: %w", errPerm(err))
	}
	spec, err := loadFlowstate()
	if err != nil {
		return nil, fmt.Errorf("load eBPF flow state: read the object: %w", err)
	}
	spec.Maps["cells"].MaxEntries = uint32(opt.Cells)
	spec.Maps["events"].MaxEntries = uint32(opt.EventRing)
	spec.Maps["dedup"].MaxEntries = uint32(max(buckets, 1))
	spec.Maps["frames"].MaxEntries = uint32(opt.FrameRing)
	s := &State{dedupBuckets: buckets}
	var l stateLive
	var err2 error
	switch opt.Live {
	case LiveAll:
		err2 = spec.LoadAndAssign(&l, nil)
	case LiveXDP:
		var x stateLiveXDP
		err2 = spec.LoadAndAssign(&x, nil)
		l.flowstateMaps, l.Replay, l.XDP = x.flowstateMaps, x.Replay, x.XDP
	case LiveTC:
		var t stateLiveTC
		err2 = spec.LoadAndAssign(&t, nil)
		l.flowstateMaps, l.Replay, l.TCIngress, l.TCEgress = t.flowstateMaps, t.Replay, t.TCIngress, t.TCEgress
	default:
		var r stateReplay
		err2 = spec.LoadAndAssign(&r, nil)
		l.flowstateMaps, l.Replay = r.flowstateMaps, r.Replay
	}
	if err2 != nil {
		return nil, fmt.Errorf("load eBPF flow state: %w", errPerm(err2))
	}
	s.objs.flowstateMaps = l.flowstateMaps
	s.objs.FlowmonStateReplay = l.Replay
	s.objs.FlowmonStateXdp, s.objs.FlowmonStateTcIngress, s.objs.FlowmonStateTcEgress = l.XDP, l.TCIngress, l.TCEgress
	if err := s.objs.FrameSettings.Put(uint32(0), flowstateFrameConfig{WakeupBytes: uint32(opt.FrameWakeup)}); err != nil {
		s.Close()
		return nil, fmt.Errorf("load eBPF flow state: set the frames' wakeup: %w", err)
	}
	var t flowstateMachineTables
	copy(t.Next[:], m.Next)
	copy(t.Info[:], m.Info)
	for v, n := range m.IdleNew {
		t.Info[v] &^= infoIdleNew
		if n {
			t.Info[v] |= infoIdleNew
		}
	}
	for v := range m.Info {
		t.Info[v] &^= infoS0
		if v < len(m.S0) && m.S0[v] {
			t.Info[v] |= infoS0
		}
	}
	t.Start, t.ServerPorts = m.Start, m.ServerPorts
	if err := s.objs.Machine.Put(uint32(0), &t); err != nil {
		s.Close()
		return nil, fmt.Errorf("load eBPF flow state: set the machine: %w", err)
	}
	never := func(d time.Duration) int64 {
		if d == 0 {
			return noTimeout
		}
		return int64(d)
	}
	cfg := flowstateStateConfig{IdleNew: never(opt.IdleNew), IdleEst: never(opt.IdleEstablished), Attempt: never(opt.AttemptDelay),
		Linger: int64(opt.Linger), ActiveSec: uint32(min(opt.ActiveTimeout/time.Second, 1<<32-1)),
		DedupBuckets: uint32(buckets), DedupTick: int64(opt.DedupWindow / 4), PayloadBytes: uint32(opt.DedupPayloadBytes)}
	if err := s.objs.Config.Put(uint32(0), &cfg); err != nil {
		s.Close()
		return nil, fmt.Errorf("load eBPF flow state: set the timeouts: %w", err)
	}
	return s, nil
}

// Close detaches the live programs and releases the programs and maps.
func (s *State) Close() error { return errors.Join(s.hooks.detach(), s.objs.Close()) }

// SetTunnels sets the UDP tunnels whose frames the programs leave
// (StateCounters.Whole) to user space.
func (s *State) SetTunnels(t Tunnels) error {
	b := flowstatePortBits{Detect: t.detect()}
	for _, p := range t.Ports {
		b.W[p>>6] |= 1 << (p & 63)
	}
	return s.objs.TunnelPorts.Put(uint32(0), &b)
}

// Verdict is what the program did with a frame.
type Verdict uint8

// Verdicts.
const (
	// Kept: the frame's flow cell took it.
	Kept Verdict = iota
	// Whole: a frame the program does not keep, for user space to
	// decode and count: a tunnel, a fragment (first or later: user
	// space reassembles), a TCP packet without its header, a frame that
	// does not parse here, or one Run does not take (StateCounters says
	// which).
	Whole
	// Left: a new flow's packet the map had no room for
	// (StateCounters.InsertFailed), left out.
	Left
)

// Run runs one Ethernet frame through the replay program at packet time
// now (nanoseconds; in a live load, the monotonic clock, the live
// programs' time), with BPF_PROG_TEST_RUN, and says what the program did
// with it. buf is scratch space the caller keeps between calls. Frames
// shorter than an Ethernet header are not run: Whole. Nor are frames
// longer than a test run takes (MaxRunFrame): Whole, and counted in
// StateCounters.Seen and Whole.
func (s *State) Run(frame []byte, now int64, buf *[]byte) (Verdict, error) {
	if len(frame) < 14 {
		return Whole, nil
	}
	if len(frame) > MaxRunFrame {
		s.tooLong.Add(1)
		return Whole, nil
	}
	b := append((*buf)[:0], 0, 0, 0, 0, 0, 0, 0, 0)
	binary.LittleEndian.PutUint64(b, uint64(now))
	b = append(b, frame...)
	*buf = b
	ret, err := s.objs.FlowmonStateReplay.Run(&ebpf.RunOptions{Data: b})
	if err != nil {
		return Left, fmt.Errorf("run the eBPF flow state: %w", err)
	}
	switch ret {
	case 2: // XDP_PASS
		return Kept, nil
	case 3: // XDP_TX
		return Whole, nil
	case 1: // XDP_DROP
		return Left, nil
	}
	return Left, fmt.Errorf("run the eBPF flow state: the program returned %d", ret)
}

// MaxRunFrame is the longest frame Run takes. The replay program takes
// frames of several buffers: an XDP test run puts what fits in a page,
// after its headroom and before the skb_shared_info at its end, in the
// linear part, and the rest in up to MAX_SKB_FRAGS (17) pages of
// fragments; the packet time's 8 bytes come first. Longer than 64 KiB,
// so it takes any IP datagram, and frames GRO or TSO made.
const MaxRunFrame = maxRunLinear + maxRunFrags*4096 - 8

const (
	maxRunLinear = 4096 - 256 - 320
	maxRunFrags  = 17
)

// ClearCells empties the cell map and sets the clock back to unset
// (between two replays of one loaded program).
func (s *State) ClearCells() error {
	if err := s.objs.Clock.Put(uint32(0), flowstateClock{}); err != nil {
		return fmt.Errorf("clear the eBPF flow state's clock: %w", err)
	}
	var key [40]byte
	var keys [][40]byte
	var c flowstateFlowCell
	it := s.objs.Cells.Iterate()
	for it.Next(&key, &c) {
		keys = append(keys, key)
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("clear the eBPF flow state: %w", err)
	}
	for _, k := range keys {
		if err := s.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// ClearDedup empties the duplicate window (between two
// replays of one loaded program: a capture replayed again would find
// its own frames).
func (s *State) ClearDedup() error {
	if s.dedupBuckets == 0 {
		return nil
	}
	keys := make([]uint32, s.dedupBuckets)
	for i := range keys {
		keys[i] = uint32(i)
	}
	if _, err := s.objs.Dedup.BatchUpdate(keys, make([]flowstateDedupBucket, s.dedupBuckets), nil); err != nil {
		return fmt.Errorf("clear the eBPF duplicate window: %w", err)
	}
	return nil
}

// Counters returns the program's counts.
func (s *State) Counters() (StateCounters, error) {
	var per []flowstateStateCounters
	if err := s.objs.StateStats.Lookup(uint32(0), &per); err != nil {
		return StateCounters{}, fmt.Errorf("read the eBPF flow state's counters: %w", err)
	}
	n := s.tooLong.Load()
	c := StateCounters{Seen: n, Whole: n}
	for _, p := range per {
		c.Seen += p.Seen
		c.Counted += p.Counted
		c.Skipped += p.Skipped
		c.Whole += p.Whole
		c.InsertFailed += p.InsertFailed
		c.NewFlows += p.NewFlows
		c.Ended += p.Ended
		c.Done += p.Done
		c.Interims += p.Interims
		c.Answered += p.Answered
		c.Duplicates += p.Duplicates
		c.EventsLost += p.EventsLost
		c.RecordsLost += p.RecordsLost
		for r := range c.Reasons {
			c.Reasons[r] += p.Reasons[r]
		}
	}
	return c, nil
}

// cellBytes is a cell as the map holds it, in 8-byte words (the C
// struct's alignment): cilium/ebpf copies an array of words in and out
// of a system call as it is, where the generated struct, whose padding
// is unexported fields, goes through encoding/binary's reflection, a
// cell at a time.
type cellBytes [unsafe.Sizeof(flowstateFlowCell{}) / 8]uint64

// The cell is whole words.
var _ = [1]struct{}{}[unsafe.Sizeof(flowstateFlowCell{})%8]

// cell is b as the C struct, in native byte order and layout.
func (b *cellBytes) cell() *flowstateFlowCell { return (*flowstateFlowCell)(unsafe.Pointer(b)) }

func cellOf(st *flowstateFlowState) Cell {
	c := Cell{Value: st.Value, Ended: st.Ended != 0, Answered: st.Answered != 0, Attempt: st.Attempt != 0, First: int64(st.First), Last: int64(st.Last),
		Since: int64(st.Since), Pkts: st.Pkts, FirstSeq: st.FirstSeq, FirstAck: st.FirstAck,
		FirstIPID: st.FirstIpid, FirstFlags: st.FirstFlags, Anomalies: st.Anomalies, Starts: st.Starts,
		InterimAt: st.InterimAt}
	// struct conn_fields is Conn's layout in bytes (the generated type
	// keeps the C layout: structs.HostLayout).
	c.Conn = *(*[ConnBytes]byte)(unsafe.Pointer(&st.Conn))
	return c
}

// Cells calls fn with every cell the map holds, until fn returns false.
// Each cell is read under its lock (BPF_F_LOCK), so whole; a cell deleted
// meanwhile is passed over. fn may Take or Delete the cell it is given:
// the next key is read before fn is called, as a hash map's next key
// after a deleted one is its first.
func (s *State) Cells(fn func(key [40]byte, c Cell) bool) error {
	err := s.cellsBatch(fn)
	if errors.Is(err, ebpf.ErrNotSupported) {
		return s.cellsOneByOne(fn)
	}
	return err
}

// cellsBatch is Cells a batch of cells a system call (BPF_MAP_LOOKUP_BATCH
// with BPF_F_LOCK): a sweep of a full map reads it in tens of calls, not
// two a cell. A hash map's batch cursor is a bucket index, so a cell
// taken out of a bucket already read changes nothing ahead.
func (s *State) cellsBatch(fn func(key [40]byte, c Cell) bool) error {
	const batch = 4096
	keys := make([][40]byte, batch)
	vals := make([]cellBytes, batch)
	var cursor ebpf.MapBatchCursor
	opts := &ebpf.BatchOptions{ElemFlags: uint64(ebpf.LookupLock)}
	for {
		n, err := s.objs.Cells.BatchLookup(&cursor, keys, vals, opts)
		for i := range n {
			if !fn(keys[i], cellOf(&vals[i].cell().S)) {
				return nil
			}
		}
		switch {
		case errors.Is(err, ebpf.ErrKeyNotExist):
			return nil
		case errors.Is(err, ebpf.ErrNotSupported):
			return err
		case err != nil:
			return fmt.Errorf("read the eBPF flow state's cells: %w", err)
		}
	}
}

// cellsOneByOne is Cells for kernels without batch lookups: two system
// calls a cell.
func (s *State) cellsOneByOne(fn func(key [40]byte, c Cell) bool) error {
	var cur, next [40]byte
	var c cellBytes
	err := s.objs.Cells.NextKey(nil, &cur)
	for {
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the eBPF flow state's cells: %w", err)
		}
		nextErr := s.objs.Cells.NextKey(&cur, &next)
		lerr := s.objs.Cells.LookupWithFlags(&cur, &c, ebpf.LookupLock)
		switch {
		case errors.Is(lerr, ebpf.ErrKeyNotExist):
		case lerr != nil:
			return fmt.Errorf("read the eBPF flow state's cells: %w", lerr)
		case !fn(cur, cellOf(&c.cell().S)):
			return nil
		}
		cur, err = next, nextErr
	}
}

// Take removes the cell of key and returns it, in one step under the
// cell's lock (lookup and delete with BPF_F_LOCK): a packet of the flow
// counts either in the cell returned or in a new flow's cell, never in
// neither. ok is false when the map holds no cell for key.
func (s *State) Take(key [40]byte) (c Cell, ok bool, err error) {
	var fc cellBytes
	err = s.objs.Cells.LookupAndDeleteWithFlags(&key, &fc, ebpf.LookupLock)
	if errors.Is(err, ebpf.ErrKeyNotExist) {
		return Cell{}, false, nil
	}
	if err != nil {
		return Cell{}, false, fmt.Errorf("take an eBPF flow state cell: %w", err)
	}
	return cellOf(&fc.cell().S), true, nil
}

// Delete removes the cell of key (a flow whose record is written).
func (s *State) Delete(key [40]byte) error {
	if err := s.objs.Cells.Delete(&key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("delete an eBPF flow state cell: %w", err)
	}
	return nil
}

// NewEventReader opens a reader of the flow events.
func (s *State) NewEventReader() (*ringbuf.Reader, error) {
	r, err := ringbuf.NewReader(s.objs.Events)
	if err != nil {
		return nil, fmt.Errorf("read the eBPF flow events: %w", err)
	}
	return r, nil
}

// ParseEvent reads an event from a ring record's bytes (EventSize).
func ParseEvent(b []byte, e *Event) error {
	var r flowstateFlowEvent
	if len(b) < EventSize {
		return fmt.Errorf("a flow event of %d bytes, want %d", len(b), EventSize)
	}
	// The ring holds the C struct in native byte order and layout.
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&r)), EventSize), b)
	e.Type, e.Reason, e.Key = r.Type, r.Reason, r.Key
	e.Cell = cellOf(&r.S)
	return nil
}

// Lookup reads the cell of key, taken under its lock, leaving it in the
// map.
func (s *State) Lookup(key [40]byte) (c Cell, ok bool, err error) {
	var fc cellBytes
	err = s.objs.Cells.LookupWithFlags(&key, &fc, ebpf.LookupLock)
	if errors.Is(err, ebpf.ErrKeyNotExist) {
		return Cell{}, false, nil
	}
	if err != nil {
		return Cell{}, false, fmt.Errorf("read an eBPF flow state cell: %w", err)
	}
	return cellOf(&fc.cell().S), true, nil
}

// ResetCounters sets the program's counts to zero (between two runs of
// one loaded program).
func (s *State) ResetCounters() error {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return fmt.Errorf("reset the eBPF flow state's counters: %w", err)
	}
	if err := s.objs.StateStats.Put(uint32(0), make([]flowstateStateCounters, n)); err != nil {
		return fmt.Errorf("reset the eBPF flow state's counters: %w", err)
	}
	s.tooLong.Store(0)
	return nil
}

// MemoryBytes is the memory the kernel charges for the program's maps
// (their memlock as the kernel reports it), fixed when they are made.
func (s *State) MemoryBytes() uint64 {
	var n uint64
	v := reflect.ValueOf(&s.objs.flowstateMaps).Elem()
	for i := range v.NumField() {
		m, ok := v.Field(i).Interface().(*ebpf.Map)
		if !ok || m == nil {
			continue
		}
		if info, err := m.Info(); err == nil {
			if b, ok := info.Memlock(); ok {
				n += b
			}
		}
	}
	return n
}
