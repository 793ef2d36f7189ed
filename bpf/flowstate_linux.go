//go:build linux

package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
)

// The kernel flow state (flowstate.c): the program keeps each flow's
// state and counts in a cell of a fixed-size map and sends only flow
// events up (a flow's start, and its end with its counts).

// StateMachine is an ACSM machine as the program steps it: acsm.Tables'
// arrays (the caller converts, so that this package stays a leaf).
type StateMachine struct {
	Next        []uint16 // [value*256+input], bit 15: the transition ends the flow
	Info        []uint8  // [value]: bit 0 origIsDst, bit 1 terminal, bit 2 closed
	Start       [3][2][2]uint16
	ServerPorts [1024]uint64
}

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
}

// State is a loaded flow-state program and its maps.
type State struct {
	objs flowstateObjects
}

// Cell is one flow's state as the program keeps it. Sides are indexed by
// the key's direction: 0 sent by the key's Src.
type Cell struct {
	Value       uint16 // the machine's value
	Ended       bool   // the value ended the flow (its end event was sent)
	First, Last int64  // packet times, nanoseconds
	Pkts        [2]uint64
	IPBytes     [2]uint64
	Payload     [2]uint64
	TCPFlags    [2]uint16
	Starts      uint32 // flows the cell has held: a reuse of the 5-tuple starts another
}

// Event types.
const (
	EventStart = 1
	EventEnd   = 2
)

// Event is a flow event: a start, or an end carrying the flow's counts.
type Event struct {
	Type uint8
	Key  [40]byte
	Cell
}

// StateCounters are the program's counts, summed over the CPUs: every
// frame once in Seen and once more in exactly one of Counted, Skipped,
// Whole, InsertFailed or Reasons.
type StateCounters struct {
	Seen, Counted, Skipped, Whole, InsertFailed uint64
	NewFlows, Ended, EventsLost                 uint64
	Reasons                                     [16]uint64
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
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("load eBPF flow state: %w", errPerm(err))
	}
	spec, err := loadFlowstate()
	if err != nil {
		return nil, fmt.Errorf("load eBPF flow state: read the object: %w", err)
	}
	spec.Maps["cells"].MaxEntries = uint32(opt.Cells)
	spec.Maps["events"].MaxEntries = uint32(opt.EventRing)
	s := &State{}
	if err := spec.LoadAndAssign(&s.objs, nil); err != nil {
		return nil, fmt.Errorf("load eBPF flow state: %w", errPerm(err))
	}
	var t flowstateMachineTables
	copy(t.Next[:], m.Next)
	copy(t.Info[:], m.Info)
	t.Start, t.ServerPorts = m.Start, m.ServerPorts
	if err := s.objs.Machine.Put(uint32(0), &t); err != nil {
		s.Close()
		return nil, fmt.Errorf("load eBPF flow state: set the machine: %w", err)
	}
	return s, nil
}

// Close releases the program and its maps.
func (s *State) Close() error { return s.objs.Close() }

// SetTunnelPorts sets the UDP ports whose datagrams carry a tunnel: the
// program leaves their frames (StateCounters.Whole) to user space.
func (s *State) SetTunnelPorts(ports []uint16) error {
	var b flowstatePortBits
	for _, p := range ports {
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
	// Whole: a frame to decode in user space (a tunnel, a link layer
	// only the Go decoder knows, or one Run does not take).
	Whole
	// Left: a frame that does not parse, a later fragment, a TCP packet
	// without its header, or a new flow the map had no room for
	// (StateCounters says which).
	Left
)

// Run runs one Ethernet frame through the replay program at packet time
// now (nanoseconds), with BPF_PROG_TEST_RUN, and says what the program did
// with it. buf is scratch space the caller keeps between calls. Frames
// shorter than an Ethernet header or longer than a test run takes
// (MaxRunFrame) are not run: Whole.
func (s *State) Run(frame []byte, now int64, buf *[]byte) (Verdict, error) {
	if len(frame) < 14 || len(frame) > MaxRunFrame {
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

// MaxRunFrame is the longest frame Run takes: an XDP test run's data
// fits in a page with its headroom and the skb_shared_info at its end.
const MaxRunFrame = 4096 - 256 - 320 - 8

// ClearCells empties the cell map (between two replays of one loaded
// program).
func (s *State) ClearCells() error {
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

// Counters returns the program's counts.
func (s *State) Counters() (StateCounters, error) {
	var per []flowstateStateCounters
	if err := s.objs.StateStats.Lookup(uint32(0), &per); err != nil {
		return StateCounters{}, fmt.Errorf("read the eBPF flow state's counters: %w", err)
	}
	var c StateCounters
	for _, p := range per {
		c.Seen += p.Seen
		c.Counted += p.Counted
		c.Skipped += p.Skipped
		c.Whole += p.Whole
		c.InsertFailed += p.InsertFailed
		c.NewFlows += p.NewFlows
		c.Ended += p.Ended
		c.EventsLost += p.EventsLost
		for r := range c.Reasons {
			c.Reasons[r] += p.Reasons[r]
		}
	}
	return c, nil
}

func cellOf(c *flowstateFlowCell) Cell {
	return Cell{Value: c.Value, Ended: c.Ended != 0, First: int64(c.First), Last: int64(c.Last), Pkts: c.Pkts,
		IPBytes: c.IpBytes, Payload: c.Payload, TCPFlags: c.TcpFlags, Starts: c.Starts}
}

// Cells calls fn with every cell the map holds, until fn returns false.
func (s *State) Cells(fn func(key [40]byte, c Cell) bool) error {
	var key [40]byte
	var c flowstateFlowCell
	it := s.objs.Cells.Iterate()
	for it.Next(&key, &c) {
		if !fn(key, cellOf(&c)) {
			return nil
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("read the eBPF flow state's cells: %w", err)
	}
	return nil
}

// Delete removes the cell of key (a flow whose record is written).
func (s *State) Delete(key [40]byte) error {
	if err := s.objs.Cells.Delete(key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
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

// ParseEvent reads an event from a ring record's bytes.
func ParseEvent(b []byte, e *Event) error {
	var r flowstateFlowEvent
	if len(b) < binary.Size(&r) {
		return fmt.Errorf("a flow event of %d bytes, want %d", len(b), binary.Size(&r))
	}
	if _, err := binary.Decode(b, binary.NativeEndian, &r); err != nil {
		return fmt.Errorf("read a flow event: %w", err)
	}
	e.Type, e.Key = r.Type, r.Key
	e.Cell = Cell{Value: r.Value, First: int64(r.First), Last: int64(r.Last), Pkts: r.Pkts, IPBytes: r.IpBytes,
		Payload: r.Payload, TCPFlags: r.TcpFlags, Starts: r.Starts}
	return nil
}

// XDPProgram is the live XDP program (for Program.Benchmark and
// attaching).
func (s *State) XDPProgram() *ebpf.Program { return s.objs.FlowmonStateXdp }
