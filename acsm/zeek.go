package acsm

// This file holds the Zeek-compatible machine: one EndpointState per side
// and the rules that move them, transcribed from Zeek's TCP session
// adapter (UpdateInactiveState, UpdateSYN_SentState,
// UpdateEstablishedState, UpdateClosedState, UpdateResetState) and the
// conn_state function of base/protocols/conn/main.zeek.

import "github.com/flowmon/flowmon/capture"

// flowKind is the protocol family a value belongs to.
type flowKind uint8

const (
	kindTCP flowKind = iota
	kindUDP
	kindOther
)

// zstate is the unpacked value of the Zeek machine. It is what a backend
// stores, through the dense numbering of machine.go.
type zstate struct {
	kind      flowKind
	orig      EndpointState
	resp      EndpointState
	origIsDst bool // the originator is the canonical key's Dst
	// rstos0 says the history so far matches Zeek's RSTOS0 pattern
	// ^?S[^HAFGIQ]*R: the flow began with the originator's pure SYN, and
	// the originator has sent no SYN-ACK, pure ACK, FIN, FIN+RST or
	// multi-flag packet since.
	rstos0 bool
	// data says a payload byte was seen (Zeek's endpoint sizes are not
	// both zero), for the REJ rule on a reset originator.
	data bool
}

// epSet is a set of endpoint states (bit i = state i); 0 means any.
type epSet uint16

func eps(states ...EndpointState) epSet {
	var s epSet
	for _, x := range states {
		s |= 1 << x
	}
	return s
}

func (s epSet) has(x EndpointState) bool { return s == 0 || s&(1<<x) != 0 }

// phase orders the rules as Zeek applies them to one packet: the SYN part,
// then FIN, then RST, then (for a packet with none of them) the no-flag
// part, then the data check. In each phase at most one rule fires: the
// first that matches.
type phase uint8

const (
	phSYN phase = iota
	phFIN
	phRST
	phNoFlag
	phData
	numPhases
)

// role restricts a rule to packets from the originator or the responder.
type role uint8

const (
	anyRole role = iota
	fromOrig
	fromResp
)

// tri is a yes/no/any condition.
type tri uint8

const (
	anyTri tri = iota
	yes
	no
)

func (t tri) ok(b bool) bool { return t == anyTri || (t == yes) == b }

// keep, as a rule's target, leaves the endpoint's state unchanged.
const keep = numEndpointStates

// rule is one row of the Zeek TCP transition table. It matches on the
// sender's state when the packet arrived (from), the peer's current state,
// the sender's role, the packet's SYN/ACK/FIN/RST bits and whether it
// carries payload.
type rule struct {
	name    string
	phase   phase
	from    epSet
	role    role
	need    capture.TCPFlags // all set
	deny    capture.TCPFlags // all clear
	peer    epSet
	data    tri
	to      EndpointState // new sender state, or keep
	peerTo  EndpointState // new peer state, or keep
	flip    bool          // swap the roles (SYN/SYN-ACK reversal)
	anomaly Anomaly
}

const (
	fS = capture.SYN
	fA = capture.ACK
	fF = capture.FIN
	fR = capture.RST
)

// zeekRules is the transition table. Zeek's sequence-number checks
// (SYN_seq_jump, bad_SYN_ack, window tracking) are left out: the machine
// sees flags and payload presence only.
var zeekRules = []rule{
	// Inactive sender, SYN part (UpdateInactiveState).
	{name: "inactive/orig SYN-ACK", phase: phSYN, from: eps(Inactive), role: fromOrig, need: fS | fA, to: SynAckSent, peerTo: keep},
	{name: "inactive/orig SYN", phase: phSYN, from: eps(Inactive), role: fromOrig, need: fS, deny: fA, to: SynSent, peerTo: keep},
	{name: "inactive/resp SYN reversal", phase: phSYN, from: eps(Inactive), role: fromResp, need: fS, deny: fA, peer: eps(SynAckSent), to: Established, peerTo: Established, flip: true},
	{name: "inactive/resp SYN answers SYN", phase: phSYN, from: eps(Inactive), role: fromResp, need: fS, peer: eps(SynSent), to: Established, peerTo: Established},
	{name: "inactive/resp SYN unsolicited", phase: phSYN, from: eps(Inactive), role: fromResp, need: fS, to: Established, peerTo: keep},
	// Partial sender sends a SYN (UpdateEstablishedState, SYN_after_partial).
	{name: "partial SYN after partial", phase: phSYN, from: eps(Partial), need: fS, deny: fA, peer: eps(Inactive), to: SynSent, peerTo: keep},

	// FIN part.
	{name: "inactive FIN spontaneous", phase: phFIN, from: eps(Inactive), need: fF, deny: fS, peer: eps(Inactive, SynSent, SynAckSent, Established, Closed, Reset), to: Closed, peerTo: keep, anomaly: FinBeforeHandshake},
	{name: "inactive FIN", phase: phFIN, from: eps(Inactive), need: fF, to: Closed, peerTo: keep},
	{name: "syn_sent FIN inappropriate", phase: phFIN, from: eps(SynSent, SynAckSent), need: fF, peer: eps(Inactive, SynSent), to: Closed, peerTo: keep, anomaly: FinBeforeHandshake},
	{name: "syn_sent FIN", phase: phFIN, from: eps(SynSent, SynAckSent), need: fF, to: Closed, peerTo: keep},
	{name: "established FIN", phase: phFIN, from: eps(Established, Partial), need: fF, deny: fR, to: Closed, peerTo: keep},

	// RST part.
	{name: "inactive RST", phase: phRST, from: eps(Inactive), need: fR, to: Reset, peerTo: keep},
	{name: "syn_sent RST", phase: phRST, from: eps(SynSent, SynAckSent), need: fR, to: Reset, peerTo: keep},
	{name: "established RST", phase: phRST, from: eps(Established, Partial), need: fR, to: Reset, peerTo: keep},
	{name: "closed RST, peer open", phase: phRST, from: eps(Closed), need: fR, peer: eps(Inactive, SynSent, SynAckSent, Partial, Established, Reset), to: Reset, peerTo: keep, anomaly: RstAfterFin},
	{name: "closed RST, peer closed", phase: phRST, from: eps(Closed), need: fR, to: keep, peerTo: keep, anomaly: RstAfterFin},

	// Inactive sender, no SYN/FIN/RST.
	{name: "inactive/resp ACK of SYN", phase: phNoFlag, from: eps(Inactive), role: fromResp, peer: eps(SynSent), data: no, to: keep, peerTo: keep},
	{name: "inactive ACK after SYN-ACK", phase: phNoFlag, from: eps(Inactive), need: fA, peer: eps(Established), to: Established, peerTo: keep},
	{name: "inactive midstream", phase: phNoFlag, from: eps(Inactive), to: Partial, peerTo: keep},

	// Data check (UpdateSYN_SentState: data_before_established).
	{name: "syn_sent data", phase: phData, from: eps(SynSent, SynAckSent), deny: fR, data: yes, to: keep, peerTo: keep, anomaly: DataBeforeHandshake},
}

// ruleIndex lists, per phase, the indexes of zeekRules in order.
var ruleIndex = func() (idx [numPhases][]int) {
	for i, r := range zeekRules {
		idx[r.phase] = append(idx[r.phase], i)
	}
	return idx
}()

func (r *rule) matches(from, peer EndpointState, isOrig bool, f capture.TCPFlags, data bool) bool {
	switch {
	case !r.from.has(from), !r.peer.has(peer), !r.data.ok(data):
		return false
	case r.role == fromOrig && !isOrig, r.role == fromResp && isOrig:
		return false
	}
	return f&r.need == r.need && f&r.deny == 0
}

// zeekStepTCP applies one TCP packet to s. It returns the new state, the
// stateful anomalies, and the rules that fired (as a bit set over
// zeekRules, for the tests).
func zeekStepTCP(s zstate, isOrig bool, f capture.TCPFlags, data bool) (zstate, Anomaly, uint64) {
	f &= fS | fA | fF | fR
	ep, peer := &s.orig, &s.resp
	if !isOrig {
		ep, peer = &s.resp, &s.orig
	}
	from := *ep
	var an Anomaly
	var fired uint64
	flip := false
	for ph := phase(0); ph < numPhases; ph++ {
		switch ph {
		case phSYN:
			if f&fS == 0 {
				continue
			}
		case phFIN:
			if f&fF == 0 {
				continue
			}
		case phRST:
			if f&fR == 0 {
				continue
			}
		case phNoFlag:
			if f&(fS|fF|fR) != 0 || *ep != Inactive {
				continue
			}
			from = *ep
		}
		for _, i := range ruleIndex[ph] {
			r := &zeekRules[i]
			if !r.matches(from, *peer, isOrig, f, data) {
				continue
			}
			fired |= 1 << i
			an |= r.anomaly
			if r.to != keep {
				*ep = r.to
			}
			if r.peerTo != keep {
				*peer = r.peerTo
			}
			flip = flip || r.flip
			break
		}
	}
	// History bits: the originator's H, A, F, I and Q letters break the
	// RSTOS0 pattern (only before its RST).
	if isOrig && from != Reset {
		bits := 0
		for _, b := range []capture.TCPFlags{fS, fF, fR} {
			if f&b != 0 {
				bits++
			}
		}
		switch {
		case bits > 1: // I or Q
			s.rstos0 = false
		case f&fS != 0 && f&fA != 0: // H
			s.rstos0 = false
		case f&fF != 0: // F
			s.rstos0 = false
		case bits == 0 && !data && f&fA != 0: // A
			s.rstos0 = false
		}
	}
	if data && f&fR == 0 {
		s.data = true
	}
	if flip {
		s.orig, s.resp = s.resp, s.orig
		s.origIsDst = !s.origIsDst
	}
	return s, an, fired
}

// zeekStepOther applies a UDP (or other protocol) packet: the sender
// becomes Active.
func zeekStepOther(s zstate, isOrig bool) zstate {
	if isOrig {
		s.orig = Active
	} else {
		s.resp = Active
	}
	return s
}

// connState derives Zeek's conn_state from the two endpoint states, in the
// order of Zeek's conn_state function.
func (s zstate) connState() ConnState {
	os, rs := s.orig, s.resp
	switch s.kind {
	case kindUDP:
		switch {
		case os == Active && rs == Active:
			return SF
		case os == Active:
			return S0
		case rs == Active:
			return SHR
		}
		return OTH
	case kindOther:
		return OTH
	}
	oInactive := os == Inactive || os == Partial
	rInactive := rs == Inactive || rs == Partial
	switch {
	case rs == Reset:
		switch {
		case os == SynSent || os == SynAckSent || (os == Reset && !s.data):
			return REJ
		case oInactive:
			return RSTRH
		}
		return RSTR
	case os == Reset:
		if rInactive {
			if s.rstos0 {
				return RSTOS0
			}
			return OTH
		}
		return RSTO
	case rs == Closed && os == Closed:
		return SF
	case os == Closed:
		if rInactive {
			return SH
		}
		return S2
	case rs == Closed:
		if oInactive {
			return SHR
		}
		return S3
	case os == SynSent && rs == Inactive:
		return S0
	case os == Established && rs == Established:
		return S1
	}
	return OTH
}

// terminal reports whether the flow has ended: both sides closed, a side
// reset, or one side closed while the other never spoke (Zeek's
// close_complete).
func (s zstate) terminal() bool {
	if s.kind != kindTCP {
		return false
	}
	os, rs := s.orig, s.resp
	return os == Reset || rs == Reset || (os == Closed && rs == Closed) ||
		(os == Closed && rs == Inactive) || (rs == Closed && os == Inactive)
}

// tier is the aging class of s. A flow that has ended is closed; one
// side's FIN alone does not end it: Zeek keeps a half-closed connection
// (ExpireTimer removes it only once both sides closed, a side reset or
// the other never spoke) until tcp_inactivity_timeout, so the peer's data
// and FIN minutes later still belong to it.
func (s zstate) tier() Tier {
	if s.kind != kindTCP {
		if s.orig == Active && s.resp == Active {
			return TierEstablished
		}
		return TierNew
	}
	switch {
	case s.terminal():
		return TierClosed
	case s.orig == Established || s.resp == Established || s.orig == Closed || s.resp == Closed ||
		(s.orig == Partial && s.resp == Partial):
		return TierEstablished
	}
	return TierNew
}
