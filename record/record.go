// Package record is what leaves the agent about a flow: one record type,
// Flow, for every ended flow, and Sink, the interface of everything that
// takes records (the conn.log JSON lines writer, record/connlog; an IPFIX
// exporter; ...).
//
// A Flow holds the fields of Zeek's conn.log that flowmon knows, with the
// directions resolved (Orig is the originator), the ACSM's answer for the
// flow (its conn_state) and how sure it was, the flow hash, and the first
// and last packet times as numbers. It holds no pointer into the pipeline
// and no heap memory of its own beyond its addresses' (netip.Addr), so a
// batch of records is a plain slice the pipeline reuses.
//
// The pipeline calls a sink with batches, in the order the flows ended
// (for a replay, the same order from run to run for a given number of
// workers), from one goroutine at a time. A sink that can block (a
// network exporter) keeps its own bounded queue and never blocks the
// caller; a file writer writes in the call.
package record

import (
	"fmt"
	"net/netip"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
)

// Flow is one flow record.
type Flow struct {
	// Start and End are the flow's first and last packet times
	// (nanoseconds since the Unix epoch, packet time).
	Start, End int64
	// Hash is the flow hash (capture.Key.Hash of the canonical 5-tuple),
	// which names the flow in the ACSM, the flow counter and the shards.
	Hash uint64
	// UID is the seed of the flow's Zeek-style uid: AppendUID spells it.
	UID uint64
	// Orig and Resp are the originator's and the responder's address and
	// port (Zeek's id.orig_h, id.orig_p, id.resp_h, id.resp_p).
	Orig, Resp         netip.Addr
	OrigPort, RespPort uint16
	// Proto is the IP protocol number (capture.ProtoTCP, ...).
	Proto uint8
	// State is the ACSM's answer: the flow's conn_state at its latest
	// packet (for a flow that ended, its final state).
	State acsm.ConnState
	// Confidence is the share of the flow's packets whose state the ACSM
	// could tell (an approximate backend may answer "don't know", and the
	// state then stays as it was): 1 for every flow of an exact backend.
	// How often a state it told is wrong is the backend's measured error
	// (flowmon_acsm_shadow_*), not a per-flow figure.
	Confidence float32
	// History is Zeek's history letters (conn.log's history).
	History History
	// OrigTCPFlags and RespTCPFlags are the union of the TCP flags each
	// side sent (IPFIX's tcpControlBits; 0 for other protocols).
	OrigTCPFlags, RespTCPFlags capture.TCPFlags
	// CommunityID is the flow's Community ID v1 in base64 ("1:" and 28
	// characters; capture.AppendCommunityID), with the pipeline's seed;
	// filled where the records are delivered, not where they are made.
	CommunityID [capture.CommunityIDLen]byte
	// EndReason is why the record was written (IPFIX's flowEndReason).
	EndReason EndReason
	// Packets, bytes of payload (Zeek's orig_bytes: sequence space for
	// TCP) and IP bytes sent by each side, and the bytes of content gaps
	// (missed_bytes).
	OrigPkts, RespPkts       uint64
	OrigBytes, RespBytes     uint64
	OrigIPBytes, RespIPBytes uint64
	MissedBytes              uint64
	// TunnelParent is the uid seed of the innermost encapsulation that
	// carried the flow (Zeek's tunnel_parents), 0 when none did: the
	// carrying UDP flow's for the UDP tunnels, a tunnel's own for GRE and
	// IP in IP (one per outer address pair and tunnel kind, as Zeek's).
	TunnelParent uint64
}

// EndReason is why a flow's record was written: its values are IPFIX's
// flowEndReason (RFC 7012, information element 136).
type EndReason uint8

const (
	// EndIdle: the flow sent nothing for its idle timeout.
	EndIdle EndReason = 1
	// EndActive: an interim record of a flow still open, written after
	// its active timeout; the flow goes on.
	EndActive EndReason = 2
	// EndOfFlow: the flow ended (FIN or RST), or its 5-tuple started a new
	// flow.
	EndOfFlow EndReason = 3
	// EndForced: the flow was open when the run ended.
	EndForced EndReason = 4
	// EndLackOfResources: the flow table was full and timed the flow out
	// early to make room.
	EndLackOfResources EndReason = 5
)

func (r EndReason) String() string {
	switch r {
	case EndIdle:
		return "idle"
	case EndActive:
		return "active"
	case EndOfFlow:
		return "end"
	case EndForced:
		return "forced"
	case EndLackOfResources:
		return "resources"
	}
	return "unknown"
}

// Duration is the time from the flow's first packet to its last, in
// seconds (conn.log's duration).
func (f *Flow) Duration() float64 {
	d := f.End - f.Start
	sec, nsec := d/1e9, d%1e9
	return float64(sec) + float64(nsec)/1e9
}

// HistoryMax is the most letters a History holds; longer histories are
// cut (Zeek's ordinary flows have 2 to 12 letters).
const HistoryMax = 24

// History is a flow's history letters, in the order Zeek adds them: upper
// case for the originator, lower case for the responder, '^' where the
// roles flipped.
type History struct {
	n       uint8
	letters [HistoryMax]byte
}

// AppendLetter appends one letter, and reports false when the history is
// full (the letter is then dropped).
func (h *History) AppendLetter(c byte) bool {
	if int(h.n) >= HistoryMax {
		return false
	}
	h.letters[h.n] = c
	h.n++
	return true
}

// Len is the number of letters.
func (h *History) Len() int { return int(h.n) }

// AppendTo appends the letters to b.
func (h *History) AppendTo(b []byte) []byte { return append(b, h.letters[:h.n]...) }

// String returns the letters ("" for none: Zeek's unset "-").
func (h History) String() string { return string(h.letters[:h.n]) }

// Sink takes flow records.
type Sink interface {
	// WriteFlows takes a batch of records; flows is valid only during the
	// call. An error says the batch (or part of it) was not delivered;
	// the caller counts and reports it and goes on with the next batch.
	// A sink that delivers later than the call (a network exporter's
	// queue) returns a *LossError to say what it lost and that it is
	// failing.
	WriteFlows(flows []Flow) error
	// Flush delivers what the sink holds; the pipeline calls it at the
	// end of a run and at quiet times of a live one.
	Flush() error
}

// LossError is a sink's report from WriteFlows or Flush: of the batch
// given, Failed records were not taken (the rest were); Dropped records
// taken by earlier calls were lost since the sink last reported; Err says
// why, and that the sink is failing now even when nothing was lost yet
// (a collector down whose records wait in the sink's queue).
type LossError struct {
	Failed, Dropped uint64
	Err             error
}

func (e *LossError) Error() string {
	if e.Failed == 0 && e.Dropped == 0 {
		return e.Err.Error()
	}
	return fmt.Sprintf("%d records not taken, %d lost: %v", e.Failed, e.Dropped, e.Err)
}

func (e *LossError) Unwrap() error { return e.Err }

// Lost reports whether records were lost.
func (e *LossError) Lost() bool { return e.Failed+e.Dropped > 0 }

// Named is a sink with the name its metrics and log lines give it
// ("connlog", "ipfix"): a fixed word, not an address.
type Named struct {
	Name string
	Sink
}
