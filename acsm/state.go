package acsm

import (
	"fmt"

	"github.com/flowmon/flowmon/acsm/backend"
)

// EndpointState is one side's TCP state, as Zeek's TCP analyzer keeps it
// (TCP_ENDPOINT_*). UDP and other protocols use Inactive and Active.
type EndpointState uint8

// Endpoint states.
const (
	Inactive    EndpointState = iota // nothing seen from this side
	SynSent                          // sent a SYN
	SynAckSent                       // sent a SYN-ACK as originator (Zeek's TCP_ENDPOINT_SYN_ACK_SENT)
	Partial                          // sent data or an ACK without a handshake (midstream)
	Established                      // part of an established connection
	Closed                           // sent a FIN
	Reset                            // sent a RST
	Active                           // UDP / other: sent a packet
	numEndpointStates
)

var endpointNames = [...]string{"inactive", "syn_sent", "syn_ack_sent", "partial", "established", "closed", "reset", "active"}

func (s EndpointState) String() string {
	if int(s) < len(endpointNames) {
		return endpointNames[s]
	}
	return fmt.Sprintf("EndpointState(%d)", uint8(s))
}

// ConnState is Zeek's conn_state vocabulary. ConnUnknown ("-") is what a
// backend answers when it holds no state, or cannot tell which.
type ConnState uint8

// Connection states, in Zeek's spelling.
const (
	ConnUnknown ConnState = iota // "-": no answer
	S0                           // connection attempt seen, no reply
	S1                           // established, not terminated
	SF                           // normal establishment and termination
	REJ                          // connection attempt rejected
	S2                           // established, originator close attempt, no reply
	S3                           // established, responder close attempt, no reply
	RSTO                         // originator aborted (sent a RST)
	RSTR                         // responder sent a RST
	RSTOS0                       // originator sent a SYN then a RST, no SYN-ACK seen
	RSTRH                        // responder sent a SYN-ACK then a RST, no SYN from the originator
	SH                           // originator sent a SYN then a FIN, no SYN-ACK
	SHR                          // responder sent a SYN-ACK then a FIN, no SYN from the originator
	OTH                          // no SYN seen, midstream traffic
	NumConnStates
)

var connNames = [...]string{"-", "S0", "S1", "SF", "REJ", "S2", "S3", "RSTO", "RSTR", "RSTOS0", "RSTRH", "SH", "SHR", "OTH"}

func (c ConnState) String() string {
	if int(c) < len(connNames) {
		return connNames[c]
	}
	return fmt.Sprintf("ConnState(%d)", uint8(c))
}

// ParseConnState reads a conn_state as Zeek spells it ("-" and "" give
// ConnUnknown).
func ParseConnState(s string) (ConnState, error) {
	if s == "" {
		return ConnUnknown, nil
	}
	for i, n := range connNames {
		if n == s {
			return ConnState(i), nil
		}
	}
	return ConnUnknown, fmt.Errorf("parse conn_state %q: %w", s, ErrUnknownConnState)
}

// Result is a backend's answer to a lookup (acsm/backend).
type Result = backend.Result

// Lookup results.
const (
	Absent  = backend.Absent
	Found   = backend.Found
	Unknown = backend.Unknown
)

// Anomaly is a set of flag anomalies seen on one packet.
type Anomaly uint16

// Anomalies. The first five depend on the packet's flags alone; the last
// two on the flow's state.
const (
	SynFin              Anomaly = 1 << iota // SYN and FIN together
	SynRst                                  // SYN and RST together
	FinRst                                  // FIN and RST together
	NullScan                                // no flag at all
	XmasScan                                // FIN, PSH and URG together
	FinBeforeHandshake                      // FIN from a side that never completed or saw a handshake
	DataBeforeHandshake                     // payload while the handshake is still open
	RstAfterFin                             // RST from a side that had sent a FIN
	numAnomalies        = iota
)

var anomalyNames = [numAnomalies]string{"syn_fin", "syn_rst", "fin_rst", "null", "xmas", "fin_before_handshake", "data_before_handshake", "rst_after_fin"}

// AnomalyNames lists the anomaly kinds in bit order, as metric label values.
func AnomalyNames() []string { return append([]string(nil), anomalyNames[:]...) }

func (a Anomaly) String() string {
	if a == 0 {
		return "none"
	}
	s := ""
	for i := 0; i < numAnomalies; i++ {
		if a&(1<<i) != 0 {
			if s != "" {
				s += ","
			}
			s += anomalyNames[i]
		}
	}
	return s
}

// Tier is the aging class of a stored value: each has its own idle timeout.
type Tier uint8

// Aging tiers, after Suricata's flow timeouts.
const (
	TierNew         Tier = iota // handshake not complete, one side only
	TierEstablished             // both sides seen, or half-closed
	TierClosed                  // ended: both FINs, a RST, or a FIN the peer never answered
	numTiers
)

var tierNames = [numTiers]string{"new", "established", "closed"}

func (t Tier) String() string {
	if t < numTiers {
		return tierNames[t]
	}
	return fmt.Sprintf("Tier(%d)", uint8(t))
}
