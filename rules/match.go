package rules

import (
	"net/netip"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
)

// matches reports whether a packet of the flow orig (directed from
// originator to responder), with TCP flags f, leaving its flow in state
// st, is one the rule looks at. It allocates nothing; the lists are short.
func (m *Match) matches(orig *capture.Key, isTCP bool, f capture.TCPFlags, st acsm.ConnState) bool {
	if len(m.Protocols) > 0 && !containsProto(m.Protocols, orig.Proto) {
		return false
	}
	if m.FlagsSet|m.FlagsUnset != 0 && (!isTCP || f&m.FlagsSet != m.FlagsSet || f&m.FlagsUnset != 0) {
		return false
	}
	if m.ConnStates != 0 && !m.ConnStates.Has(st) {
		return false
	}
	return m.matchesFlow(orig)
}

func containsProto(ps []uint8, p uint8) bool {
	for _, x := range ps {
		if x == p {
			return true
		}
	}
	return false
}

// inPrefixes reports whether a is in one of ps; empty gives ifEmpty.
// Prefixes are written as IPv4 or IPv6, and IPv4 addresses may come
// IPv4-mapped, so both forms are compared.
func inPrefixes(ps []netip.Prefix, a netip.Addr, ifEmpty bool) bool {
	if len(ps) == 0 {
		return ifEmpty
	}
	a = a.Unmap()
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func inPorts(rs []PortRange, p uint16) bool {
	if len(rs) == 0 {
		return true
	}
	for _, r := range rs {
		if r.Lo <= p && p <= r.Hi {
			return true
		}
	}
	return false
}

// matchesFlow is matches without the packet's flags and the flow's state:
// whether the flow is one the rule looks at at all.
func (m *Match) matchesFlow(orig *capture.Key) bool {
	if len(m.Protocols) > 0 && !containsProto(m.Protocols, orig.Proto) {
		return false
	}
	return inPrefixes(m.Src, orig.Src, true) && inPrefixes(m.Dst, orig.Dst, true) &&
		!inPrefixes(m.NotSrc, orig.Src, false) && !inPrefixes(m.NotDst, orig.Dst, false) &&
		inPorts(m.SrcPorts, orig.SrcPort) && inPorts(m.DstPorts, orig.DstPort)
}
