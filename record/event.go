package record

import "github.com/flowmon/flowmon/acsm"

// Event is a flow kept outside the pipeline's shards (the kernel's flow
// state, which sends flow events up instead of packets), as what reads
// the shards' packets sees it instead: its start, an interim record, its
// end.
type Event struct {
	Kind EventKind
	// Flow is the flow as it stands, directed from its originator: at its
	// start, after its first packet (State, the counts and flags are that
	// packet's); at an interim record or its end, the record written.
	Flow *Flow
	// Anomalies are the flag anomalies the flow's packets showed so far
	// (acsm.Anomaly's bits; the ones a single packet's flags tell).
	Anomalies acsm.Anomaly
	// Novel, at a start, says the flow's host pair was new to the host
	// pair history (as pipeline.Lookups.Novel answers for a packet).
	Novel bool
}

// EventKind is what a flow event says.
type EventKind uint8

const (
	// FlowStarted: the flow's first packet came.
	FlowStarted EventKind = iota + 1
	// FlowInterim: the flow passed its active timeout (Flow is its
	// interim record, EndActive).
	FlowInterim
	// FlowEnded: the flow's record is written (Flow is it; EndReason says
	// why).
	FlowEnded
)
