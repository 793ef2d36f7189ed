package record

import "github.com/flowmon/flowmon/acsm"

// Event is a flow kept outside the pipeline's shards (the kernel's flow
// state, which sends flow events up instead of packets), as what reads
// the shards' packets sees it instead: its start, its leaving S0, an
// interim record, its end.
type Event struct {
	Kind EventKind
	// Flow is the flow as it stands, directed from its originator: at its
	// start, after its first packet (State, the counts and flags are that
	// packet's); when it leaves S0, after the packet that moved it; at an
	// interim record or its end, the record written.
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
	// FlowAnswered: the flow left S0 (its originator's attempt was
	// answered, or reset), once a flow, at the packet that moved it
	// (Flow is the flow as it stands after that packet: End is the
	// packet's time). It may be lost (a full event ring): the flow's
	// next record then tells the same later.
	FlowAnswered
)
