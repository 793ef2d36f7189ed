package rules

import (
	"net/netip"
)

// matches reports whether the packet x, with its TCP flags and its flow's
// state after it, is one the rule looks at. It allocates nothing; the
// lists are short.
func (m *Match) matches(x *packetCtx) bool {
	f, st := x.flags, x.ev.State
	if m.FlagsSet|m.FlagsUnset != 0 && (!x.isTCP || f&m.FlagsSet != m.FlagsSet || f&m.FlagsUnset != 0) {
		return false
	}
	if m.ConnStates != 0 && !m.ConnStates.Has(st) {
		return false
	}
	return m.matchesFlow(x)
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
// whether the flow is one the rule looks at at all. A match without
// addresses or ports does not make the packet's originator.
func (m *Match) matchesFlow(x *packetCtx) bool {
	if len(m.Protocols) > 0 && !containsProto(m.Protocols, x.proto) {
		return false
	}
	if !m.hasEndpoints {
		return true
	}
	orig := x.origin()
	return inPrefixes(m.Src, orig.Src, true) && inPrefixes(m.Dst, orig.Dst, true) &&
		!inPrefixes(m.NotSrc, orig.Src, false) && !inPrefixes(m.NotDst, orig.Dst, false) &&
		inPorts(m.SrcPorts, orig.SrcPort) && inPorts(m.DstPorts, orig.DstPort)
}

// matchesAll reports whether the match has no condition at all.
func (m *Match) matchesAll() bool {
	return len(m.Protocols) == 0 && m.FlagsSet|m.FlagsUnset == 0 && m.ConnStates == 0 && !m.hasEndpoints
}
