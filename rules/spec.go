package rules

import (
	"net/netip"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
)

// File is a rules file as written: plain data, checked but not compiled
// (Compile turns it into a Set).
type File struct {
	Name   string // the path it was read from, for messages
	Groups []Group
}

// Group is a named list of rules sharing a default window.
type Group struct {
	Name string
	// Interval is the window of the group's counting rules that do not
	// set their own (default DefaultInterval).
	Interval time.Duration
	Rules    []Rule
	Pos      Pos
}

// DefaultInterval is a group's interval when it sets none.
const DefaultInterval = 10 * time.Second

// Pos is a position in a rules file.
type Pos struct{ Line, Col int }

// Rule is one detection rule.
type Rule struct {
	Alert string // the alert's name (its alertname label)
	Kind  Kind
	Match Match
	// Track says which key an alert is about, and so what counts and
	// folds together: the flow, its source (originator), its destination
	// (responder), or the pair of hosts.
	Track Track
	// The kind's condition: only the one of Kind is set.
	Transition Transition
	Anomalies  acsm.Anomaly // kind anomaly: any of these
	Threshold  Threshold
	Volume     Volume
	Duplicates Duplicates
	Watchlist  Watchlist
	// For is how long (in packet time) the condition must hold before the
	// alert fires: over consecutive windows for counting rules, over
	// repeats no further apart than Suppress for event rules.
	For time.Duration
	// Suppress is the window inside which a repeat of the alert (same
	// labels) folds into the firing one, adding to its count; an event
	// rule's alert resolves when no repeat came for that long.
	Suppress    time.Duration
	Severity    string
	Labels      map[string]string
	Annotations map[string]string
	Pos         Pos
}

// Watchlist is a watchlist rule's condition: a new flow whose address on
// Side is on the watchlist named List. (A novelty rule has no condition
// of its own: `novelty: {}`; its match limits the flows it looks at.)
type Watchlist struct {
	List string
	Side Side
}

// Side is which of a flow's addresses a watchlist rule checks.
type Side uint8

// Sides.
const (
	EitherSide Side = iota // the originator's or the responder's
	SrcSide                // the originator's
	DstSide                // the responder's
)

var sideNames = map[string]Side{"either": EitherSide, "src": SrcSide, "dst": DstSide}

// DefaultSuppress is a rule's suppress window when it sets none.
const DefaultSuppress = 5 * time.Minute

// DefaultSeverity is a rule's severity when it sets none.
const DefaultSeverity = "warning"

// Kind is what a rule looks for.
type Kind uint8

// Kinds of rules.
const (
	KindTransition Kind = iota + 1 // a flow enters a conn_state, or moves from one to another
	KindAnomaly                    // the ACSM's flag anomalies
	KindThreshold                  // events per key per window above a threshold
	KindVolume                     // packets or bytes per key per window above a threshold
	KindDuplicates                 // the dedup stage's duplicate share over a window
	KindWatchlist                  // a new flow touches an address on a watchlist
	KindNovelty                    // a new flow between hosts never seen together within the history's horizon
)

var kindNames = map[string]Kind{"transition": KindTransition, "anomaly": KindAnomaly, "threshold": KindThreshold, "volume": KindVolume,
	"duplicates": KindDuplicates, "watchlist": KindWatchlist, "novelty": KindNovelty}

func (k Kind) String() string {
	for n, v := range kindNames {
		if v == k {
			return n
		}
	}
	return "unknown"
}

// Track is the key an alert is about.
type Track uint8

// Tracked keys.
const (
	ByFlow Track = iota // the 5-tuple
	BySrc               // the originator's address
	ByDst               // the responder's address
	ByPair              // both addresses
)

var trackNames = map[string]Track{"by_flow": ByFlow, "by_src": BySrc, "by_dst": ByDst, "by_pair": ByPair}

func (t Track) String() string {
	for n, v := range trackNames {
		if v == t {
			return n
		}
	}
	return "unknown"
}

// Match selects the packets a rule looks at. Source and destination are
// the flow's originator and responder (Zeek's orig and resp), whichever
// direction the packet went. An empty field matches everything.
type Match struct {
	Protocols      []uint8
	Src, Dst       []netip.Prefix
	NotSrc, NotDst []netip.Prefix
	SrcPorts       []PortRange
	DstPorts       []PortRange
	FlagsSet       capture.TCPFlags // the packet has all of these
	FlagsUnset     capture.TCPFlags // and none of these
	ConnStates     StateSet         // the flow's conn_state after the packet
	hasEndpoints   bool             // any address or port condition (set by Parse)
}

// PortRange is an inclusive range of ports.
type PortRange struct{ Lo, Hi uint16 }

// StateSet is a set of conn_states (bit i is acsm.ConnState(i)).
type StateSet uint32

// Has reports whether s holds c.
func (s StateSet) Has(c acsm.ConnState) bool { return s&(1<<c) != 0 }

// Transition is a transition rule's condition: the flow's conn_state
// becomes one of To, having been one of From (any state, including a new
// flow's, when From is empty).
type Transition struct{ From, To StateSet }

// Event is what a threshold rule counts.
type Event uint8

// Events a threshold rule counts per key.
const (
	EventNewFlow          Event = iota + 1 // a flow starts
	EventAttempt                           // a TCP flow starts with a bare SYN
	EventHalfOpen                          // attempts not (yet) answered: attempts minus flows that left S0
	EventConnState                         // a flow enters one of match.conn_state
	EventPacket                            // a packet
	EventDistinctDstPorts                  // distinct responder ports of new flows
	EventDistinctDstHosts                  // distinct responder addresses of new flows
	EventDistinctSrcHosts                  // distinct originator addresses of new flows
)

var eventNames = map[string]Event{
	"new_flow": EventNewFlow, "attempt": EventAttempt, "half_open": EventHalfOpen, "conn_state": EventConnState,
	"packet": EventPacket, "distinct_dst_ports": EventDistinctDstPorts, "distinct_dst_hosts": EventDistinctDstHosts,
	"distinct_src_hosts": EventDistinctSrcHosts,
}

func (e Event) String() string {
	for n, v := range eventNames {
		if v == e {
			return n
		}
	}
	return "unknown"
}

// distinct reports whether e counts distinct items (a HyperLogLog sketch)
// rather than occurrences (a count-min sketch).
func (e Event) distinct() bool {
	return e == EventDistinctDstPorts || e == EventDistinctDstHosts || e == EventDistinctSrcHosts
}

// Threshold is a threshold rule's condition: more than Above events per
// tracked key within one Window.
type Threshold struct {
	Event  Event
	Above  float64
	Window time.Duration // default: the group's interval
	// Error is the sketch's error as a share of the window's events
	// (count-min's epsilon, default DefaultError) or the standard error of
	// a distinct count (default DefaultDistinctError); 0 takes the default.
	Error float64
}

// DefaultError is a counting rule's count-min epsilon when it sets none:
// 544 KB a window, and 10 million distinct keys in a window leave
// another key estimated at about 150 (rules/sketch.go).
const DefaultError = 1e-4

// Measure is what a volume rule adds up.
type Measure uint8

// Measures.
const (
	Packets Measure = iota + 1
	Bytes           // wire bytes
)

var measureNames = map[string]Measure{"packets": Packets, "bytes": Bytes}

func (m Measure) String() string {
	if m == Bytes {
		return "bytes"
	}
	return "packets"
}

// Volume is a volume rule's condition: more than Above packets or bytes
// per tracked key within one Window (heavy hitters).
type Volume struct {
	Measure Measure
	Above   float64
	Window  time.Duration
	Error   float64
}

// Duplicates is a duplicates rule's condition: within one Window of at
// least MinPackets packets, more than Above (a share, 0..1) were dropped
// as duplicates by the dedup stage.
type Duplicates struct {
	Above      float64
	MinPackets uint64
	Window     time.Duration
}

// DefaultMinPackets is a duplicates rule's MinPackets when it sets none.
const DefaultMinPackets = 1000

// window returns the rule's counting window (0 for event rules).
func (r *Rule) window() time.Duration {
	switch r.Kind {
	case KindThreshold:
		return r.Threshold.Window
	case KindVolume:
		return r.Volume.Window
	case KindDuplicates:
		return r.Duplicates.Window
	}
	return 0
}
