package kernelflows

import (
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/pipeline/flowcount"
	"github.com/flowmon/flowmon/pipeline/flowtable"
	"github.com/flowmon/flowmon/record"
)

// Config shapes a Table.
type Config struct {
	// Cells is the most flows the kernel's map holds; its memory is
	// fixed when the program loads (default 1<<18, the user-space
	// table's default max-flows). A new flow that finds it full is
	// counted, not kept.
	Cells int
	// EventRing is the event ring's size in bytes (a power of two and a
	// multiple of the page size; default 4 MiB).
	EventRing int
	// Machine is the ACSM's state machine.
	Machine acsm.MachineKind
	// IdleNew and IdleEstablished are the idle timeouts, as the
	// user-space table's (flowtable.Config); ActiveTimeout, when not 0,
	// writes an open flow's interim record that often (whole seconds).
	IdleNew, IdleEstablished, ActiveTimeout time.Duration
	// AttemptDelay, when not 0, ends a flow that began with a pure SYN
	// and is still unanswered that long after the SYN (flowtable's
	// AttemptDelay).
	AttemptDelay time.Duration
	// DedupSlots, when not 0, gives the program a duplicate window of
	// that many fingerprints, held for DedupWindow (bpf.StateOptions): the
	// dedup stage's place for the frames it keeps. DedupPayloadBytes is
	// the payload bytes a fingerprint takes (dedup.Config.PayloadBytes).
	// The window is the fingerprint table's whatever dedup.Config.FBF
	// says, and it has no retransmission window: the frames it keeps
	// are not checked for retransmissions.
	DedupSlots        int
	DedupWindow       time.Duration
	DedupPayloadBytes int
	// TunnelPorts are the UDP ports whose datagrams carry a tunnel, and
	// DetectTeredo and DetectAYIYA the decoder's options of the same
	// names (Teredo and AYIYA found by their payload on any port): their
	// frames go to user space.
	TunnelPorts               []uint16
	DetectTeredo, DetectAYIYA bool
	// Out takes the records (nil: none are written, flows are counted).
	Out flowtable.Out
	// Events, when set, is called with each flow's start, its leaving
	// S0, interim records and end (the consumers' flow events); its
	// argument is valid during the call.
	Events func(*record.Event)
	// Counts, when set, is given the packets the program counted in its
	// cells and the duplicates its window dropped, since the last call,
	// once a second of packet time and at Finish.
	Counts func(packets, duplicates uint64, now int64)
	// Counter, when set, counts each flow's packets per window, as a
	// shard's flow table does (the CCF windows a peer compares).
	Counter *flowcount.Counter
}

func (c Config) withDefaults() Config {
	if c.Cells == 0 {
		c.Cells = 1 << 18
	}
	if c.EventRing == 0 {
		c.EventRing = 4 << 20
	}
	to := acsm.Timeouts{New: c.IdleNew, Established: c.IdleEstablished}.WithDefaults()
	c.IdleNew, c.IdleEstablished = to.New, to.Established
	return c
}

// Stats are a Table's counts.
type Stats struct {
	// Events is the flow events read; Started the flows started;
	// Answered those whose answered event came (they left S0).
	Events, Started, Answered uint64
	// Records is the flows whose final record was written (or counted,
	// without records); TimedOut those of them the sweep found idle.
	Records, TimedOut uint64
	// The program's counts, summed over the CPUs: every frame it saw once
	// in Seen and once more in one of Counted (its flow's cell took it),
	// Duplicates (the duplicate window held it: left out), Whole (left to
	// user space), InsertFailed (a new flow and the map full) or
	// Malformed.
	Seen, Counted, Duplicates, Whole, InsertFailed, Malformed uint64
	// Datagrams is those of Seen that were datagrams reassembled in user
	// space from fragments the program left whole, run through it again
	// (Table.TakeDatagram); DatagramErrors those a live table failed to
	// run, left to user space.
	Datagrams, DatagramErrors uint64
	// EventsSent is the events the program made (starts, answers, ends,
	// done flows, interim records), EventsLost those the full ring did
	// not take, and RecordsLost the flows whose final counts went with
	// them.
	EventsSent, EventsLost, RecordsLost uint64
	// Cells is the map's size in flows, and MemoryBytes its memory;
	// CellsInUse the flows it holds (counted from the program's new and
	// done flows and the cells the table took out).
	Cells       int
	MemoryBytes uint64
	CellsInUse  uint64

	taken uint64 // cells taken out with their records
}

// MaxEventsRead bounds the events one ReadEvents handles, so that under
// a flood of new flows the sweep and the records' delivery still run; a
// reader that got this many has more to read at once.
const MaxEventsRead = 4096
