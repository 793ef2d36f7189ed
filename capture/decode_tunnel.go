package capture

import "encoding/binary"

// IP protocols that carry a tunnel.
const (
	protoIPIP = 4
	protoIPv6 = 41
)

// innerKind is what a tunnel header says follows it.
type innerKind uint8

const (
	innerNone     innerKind = iota // no packet: the datagram is the UDP flow it is
	innerEthernet                  // an Ethernet frame
	innerIP                        // IPv4 or IPv6, by the version nibble
	innerIPv4
	innerIPv6
	innerGRE
	innerNSH // a network service header (RFC 8300)
)

// tunnelSave is what entering a UDP tunnel changes in a Packet, kept so
// that a datagram whose payload turns out to carry no IP packet is again
// the UDP flow it is. The carriers are kept only when there are any.
type tunnelSave struct {
	car       Carriers
	tunnels   uint8
	kind      TunnelKind
	etherType uint16
	vlans     uint8
	ttl       uint8
	ipID      uint32
	ipLen     uint16
	frag      FragKind
}

func (s *tunnelSave) save(p *Packet) {
	if p.Tunnels > 0 {
		s.car = *p.Carriers
	}
	s.tunnels, s.kind = p.Tunnels, p.Tunnel
	s.etherType, s.vlans, s.ttl, s.ipID, s.ipLen, s.frag = p.EtherType, p.VLANs, p.TTL, p.IPID, p.IPLen, p.Fragment
}

func (s *tunnelSave) restore(p *Packet) {
	if s.tunnels > 0 {
		*p.Carriers = s.car
	}
	p.Tunnels, p.Tunnel = s.tunnels, s.kind
	p.EtherType, p.VLANs, p.TTL, p.IPID, p.IPLen, p.Fragment = s.etherType, s.vlans, s.ttl, s.ipID, s.ipLen, s.frag
	p.HasTCP, p.Flags, p.Seq, p.Ack, p.Window = false, 0, 0, 0, 0
}

// enter records one more tunnel: its kind and the flow carrying it. The
// inner packet's IP fields replace the outer's, so a fragmented carrier
// does not mark its inner packet a fragment. The Packet's Carriers are
// made here the first time it holds a tunnelled packet, so an
// untunnelled packet never touches them.
func (o *DecodeOptions) enter(p *Packet, kind TunnelKind, src, dst []byte, sport, dport uint16, proto uint8) Reason {
	c := p.Carriers
	if c == nil {
		c = new(Carriers)
		p.Carriers = c
	}
	if p.Tunnels == 1 {
		c.Outermost = c.Outer
	}
	c.Outer.Len = 0
	p.Tunnels++
	p.Tunnel = kind
	c.Outer.Reversed = fillKey(&c.Outer.Key, &c.Outer.Hash, src, dst, sport, dport, proto)
	p.Fragment, p.IPID = NotFragment, 0
	maxDepth := o.MaxTunnelDepth
	if maxDepth <= 0 {
		maxDepth = DefaultMaxTunnelDepth
	}
	if int(p.Tunnels) > min(maxDepth, MaxMaxTunnelDepth) {
		return ReasonTunnelDepth
	}
	return ReasonNone
}

// decodeIPTunnel decapsulates IP in IP and GRE; b is the carrier's IP
// payload as captured.
func (o *DecodeOptions) decodeIPTunnel(p *Packet, src, dst []byte, proto uint8, b []byte) Reason {
	kind := TunnelIP
	if proto == ProtoGRE {
		kind = TunnelGRE
	}
	if r := o.enter(p, kind, src, dst, 0, 0, proto); r != ReasonNone {
		return r
	}
	switch proto {
	case protoIPIP:
		return o.decodeIPv4(p, b)
	case protoIPv6:
		return o.decodeIPv6(p, b)
	}
	return o.decodeGRE(p, b)
}

// udpTunnel says which tunnel a UDP datagram carries, if any: the one
// its destination port names, else its source port's, else Teredo or
// AYIYA when detection finds them in the payload b. It runs for every UDP
// datagram: the compiled port table answers with a bit for each port,
// and decodeUDPTunnel's frame (which saves the packet) stays off that
// path.
func (o *DecodeOptions) udpTunnel(sport, dport uint16, b []byte) TunnelKind {
	if k := o.udpTunnelByPort(sport, dport); k != TunnelNone {
		return k
	}
	switch {
	case o.DetectAYIYA && len(b) >= 3 && b[1] == 0x52 && b[2] == 0x11:
		return TunnelAYIYA
	case o.DetectTeredo && looksTeredo(b):
		return TunnelTeredo
	}
	return TunnelNone
}

// udpTunnelByPort is the tunnel of the lists that hold dport, else
// sport: the compiled table's, or for options that were not compiled,
// the lists' own.
func (o *DecodeOptions) udpTunnelByPort(sport, dport uint16) TunnelKind {
	if t := o.ports; t != nil {
		return t.byPort(sport, dport)
	}
	bySrc := TunnelNone
	lists := o.portLists()
	for i := range lists {
		switch d, s := portIn(lists[i].ports, sport, dport); {
		case d:
			return lists[i].kind
		case s:
			bySrc = lists[i].kind
		}
	}
	return bySrc
}

// portIn reports whether l holds dport, and whether it holds sport.
func portIn(l []uint16, sport, dport uint16) (dst, src bool) {
	for _, q := range l {
		dst = dst || q == dport
		src = src || q == sport
	}
	return dst, src
}

// decodeUDPTunnel decapsulates a UDP datagram that udpTunnel found to
// carry a tunnel of the given kind. b is the UDP payload as captured, n
// its length from the IP header. It reports false when the datagram
// carries no IP packet after all: then p is as it was, and the datagram
// is its own UDP flow, as Zeek logs it.
func (o *DecodeOptions) decodeUDPTunnel(p *Packet, kind TunnelKind, src, dst []byte, sport, dport uint16, b []byte, n int) (Reason, bool) {
	b = b[:min(len(b), n)] // no Ethernet padding
	var off int
	var inner innerKind
	var r Reason
	switch kind {
	case TunnelVXLAN:
		off, inner, r = vxlanHeader(b)
	case TunnelVXLANGPE:
		off, inner, r = vxlanGPEHeader(b)
	case TunnelGeneve:
		off, inner, r = geneveHeader(b)
	case TunnelGTP:
		off, inner, r = gtpHeader(b)
	case TunnelTeredo:
		off, inner, r = teredoHeader(b, n)
	case TunnelAYIYA:
		off, inner, r = ayiyaHeader(b)
	default:
		kind, inner = TunnelGRE, innerGRE
	}
	if r == ReasonNone && inner == innerNone {
		return ReasonNone, false
	}
	var s tunnelSave
	s.save(p)
	if r2 := o.enter(p, kind, src, dst, sport, dport, ProtoUDP); r2 != ReasonNone {
		return r2, true
	}
	p.Carriers.Outer.Len = uint32(n)
	if r != ReasonNone {
		return r, true
	}
	b = b[off:]
	switch inner {
	case innerEthernet:
		r = o.decodeEthernet(p, b)
	case innerIP:
		r = o.decodeIPByVersion(p, b)
	case innerIPv4:
		r = o.decodeIPv4(p, b)
	case innerIPv6:
		r = o.decodeIPv6(p, b)
	case innerNSH:
		r = o.decodeEtherType(p, etherTypeNSH, b)
	default:
		r = o.decodeGRE(p, b)
	}
	if r == ReasonNotIP {
		s.restore(p)
		return ReasonNone, false
	}
	return r, true
}

// vxlanHeader: 8 bytes (flags, VNI), then an Ethernet frame.
func vxlanHeader(b []byte) (int, innerKind, Reason) {
	if len(b) < 8 {
		return 0, innerNone, ReasonTunnelTruncated
	}
	return 8, innerEthernet, ReasonNone
}

// vxlanGPEHeader: 8 bytes (flags with a 2-bit version, 0; the next
// protocol; the VNI), then what the next protocol names, in NSH's
// numbers: IPv4, IPv6, Ethernet, NSH. The next protocol is read whatever
// the P bit says (the current draft wants it set; the early ones took a
// clear P for Ethernet), as tshark reads it. Another version, or a next
// protocol carrying no packet flowmon reads, is no packet: the datagram
// is its UDP flow.
func vxlanGPEHeader(b []byte) (int, innerKind, Reason) {
	if len(b) < 8 {
		return 0, innerNone, ReasonTunnelTruncated
	}
	if b[0]&0x30 != 0 {
		return 0, innerNone, ReasonNone
	}
	switch b[3] {
	case nshNextIPv4:
		return 8, innerIPv4, ReasonNone
	case nshNextIPv6:
		return 8, innerIPv6, ReasonNone
	case nshNextEthernet:
		return 8, innerEthernet, ReasonNone
	case nshNextNSH:
		return 8, innerNSH, ReasonNone
	}
	return 0, innerNone, ReasonNone
}

// geneveHeader: 8 bytes and the options the header's length counts in
// 4-byte words, then what its protocol type names.
func geneveHeader(b []byte) (int, innerKind, Reason) {
	if len(b) < 8 {
		return 0, innerNone, ReasonTunnelTruncated
	}
	hl := 8 + int(b[0]&0x3F)*4
	if len(b) < hl {
		return 0, innerNone, ReasonTunnelTruncated
	}
	switch binary.BigEndian.Uint16(b[2:]) {
	case 0x6558:
		return hl, innerEthernet, ReasonNone
	case EtherTypeIPv4:
		return hl, innerIPv4, ReasonNone
	case EtherTypeIPv6:
		return hl, innerIPv6, ReasonNone
	}
	return 0, innerNone, ReasonNone
}

// maxGTPExtensions bounds the GTP extension headers walked.
const maxGTPExtensions = 8

// gtpHeader: GTPv1 (version 1, protocol type 1); only a G-PDU (message
// type 255) carries a packet. The sequence number, N-PDU number and next
// extension type are there when any of the E, S and PN flags is, and with
// E extension headers (a length in 4-byte words, the last byte naming the
// next) follow while a next type is not 0. The packet is the rest of the
// datagram, whatever the length field says, as Zeek reads it.
func gtpHeader(b []byte) (int, innerKind, Reason) {
	if len(b) < 8 {
		return 0, innerNone, ReasonTunnelTruncated
	}
	if b[0]>>5 != 1 || b[0]&0x10 == 0 || b[1] != 255 {
		return 0, innerNone, ReasonNone
	}
	hl := 8
	if b[0]&0x07 != 0 {
		if len(b) < 12 {
			return 0, innerNone, ReasonTunnelTruncated
		}
		hl = 12
		for i, next := 0, b[11]; b[0]&0x04 != 0 && next != 0; i++ {
			if i == maxGTPExtensions || len(b) < hl+1 || b[hl] == 0 {
				return 0, innerNone, ReasonTunnelTruncated
			}
			el := int(b[hl]) * 4
			if len(b) < hl+el {
				return 0, innerNone, ReasonTunnelTruncated
			}
			next = b[hl+el-1]
			hl += el
		}
	}
	if len(b) == hl {
		return 0, innerNone, ReasonNone // a G-PDU with no packet
	}
	return hl, innerIP, ReasonNone
}

// looksTeredo is Zeek's Teredo protocol detection: an IPv6 header with a
// Teredo (2001:0::/32) address, or authentication and origin indication
// headers followed by an IPv6 header.
func looksTeredo(b []byte) bool {
	if len(b) < 40 || (b[0]>>4 != 6 && (b[0] != 0 || b[1] > 1)) {
		return false
	}
	teredo := func(a []byte) bool { return a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0 }
	if b[0]>>4 == 6 && (teredo(b[8:]) || teredo(b[24:])) {
		return true
	}
	val := b[1]
	if val == 1 {
		skip := 13 + int(b[2]) + int(b[3])
		if len(b) < skip+40 {
			return false
		}
		b = b[skip:]
		val = 0xFF
		if b[0] == 0 && b[1] == 0 {
			val = 0
		}
	}
	return val == 0 && len(b) >= 48 && b[8]>>4 == 6
}

// teredoHeader: an authentication header (tag 1), an origin indication
// (tag 0), then an IPv6 packet whose length is the rest of the datagram
// (n bytes), as Zeek checks it. A bubble (no next header, no payload)
// carries no packet.
func teredoHeader(b []byte, n int) (int, innerKind, Reason) {
	off := 0
	auth, origin := false, false
	for range 3 {
		if len(b) < off+2 {
			return 0, innerNone, ReasonTunnelTruncated
		}
		switch tag := binary.BigEndian.Uint16(b[off:]); {
		case tag == 0 && !origin:
			if len(b) < off+8 {
				return 0, innerNone, ReasonTunnelTruncated
			}
			origin = true
			off += 8
		case tag == 1 && !origin && !auth:
			if len(b) < off+4 {
				return 0, innerNone, ReasonTunnelTruncated
			}
			auth = true
			off += 13 + int(b[off+2]) + int(b[off+3])
		case tag>>12 == 6:
			if len(b) < off+40 {
				return 0, innerNone, ReasonTunnelTruncated
			}
			plen := int(binary.BigEndian.Uint16(b[off+4:]))
			if b[off+6] == 59 && plen == 0 {
				return 0, innerNone, ReasonNone // a bubble
			}
			if off+40+plen != n {
				return 0, innerNone, ReasonNone // not Teredo after all
			}
			return off, innerIPv6, ReasonNone
		default:
			return 0, innerNone, ReasonNone
		}
	}
	return 0, innerNone, ReasonNone
}

// ayiyaHeader: 8 bytes, an identity of 2^n bytes and a signature of 4n;
// only a forward (opcode 1) of IPv4 or IPv6 carries a packet.
func ayiyaHeader(b []byte) (int, innerKind, Reason) {
	if len(b) < 8 {
		return 0, innerNone, ReasonTunnelTruncated
	}
	hl := 8 + 1<<(b[0]>>4) + int(b[1]>>4)*4
	if len(b) < hl {
		return 0, innerNone, ReasonTunnelTruncated
	}
	if b[2]&0x0F != 1 || len(b) == hl {
		return 0, innerNone, ReasonNone
	}
	switch b[3] {
	case protoIPIP:
		return hl, innerIPv4, ReasonNone
	case protoIPv6:
		return hl, innerIPv6, ReasonNone
	}
	return 0, innerNone, ReasonNone
}

// GRE flag bits (RFC 2784, 2890; RFC 2637's enhanced GRE adds A).
const (
	greChecksum = 0x8000
	greRouting  = 0x4000
	greKey      = 0x2000
	greSeq      = 0x1000
	greAck      = 0x0080
	greReserved = 0x0078
)

// decodeGRE decodes a GRE header and what it carries, as Zeek does:
// version 0 with IPv4, IPv6, MPLS (any EtherType the link walk knows),
// transparent Ethernet bridging, ERSPAN types I, II and III and Aruba's
// 802.11 types; version 1 (PPTP) with PPP carrying IPv4 or IPv6.
func (o *DecodeOptions) decodeGRE(p *Packet, b []byte) Reason {
	if len(b) < 4 {
		return ReasonTunnelTruncated
	}
	fv := binary.BigEndian.Uint16(b)
	pt := binary.BigEndian.Uint16(b[2:])
	ver := fv & 7
	if ver > 1 || fv&(greRouting|greReserved) != 0 {
		return ReasonGREHeader
	}
	hl := 4
	for _, f := range [...]uint16{greChecksum, greKey, greSeq, greAck} {
		if fv&f != 0 {
			hl += 4
		}
	}
	if ver == 1 {
		if pt != 0x880B {
			return ReasonGREHeader
		}
		if len(b) < hl+4 {
			return ReasonTunnelTruncated
		}
		switch binary.BigEndian.Uint16(b[hl+2:]) {
		case 0x0021:
			return o.decodeIPv4(p, b[hl+4:])
		case 0x0057:
			return o.decodeIPv6(p, b[hl+4:])
		}
		return ReasonNotIP
	}
	if len(b) < hl {
		return ReasonTunnelTruncated
	}
	switch {
	case pt == 0x6558:
		return o.decodeEthernetIn(p, b, hl)
	case pt == 0x88BE:
		if fv&greSeq != 0 {
			hl += 8 // ERSPAN type II; type I has no header of its own
		}
		return o.decodeEthernetIn(p, b, hl)
	case pt == 0x22EB:
		if len(b) < hl+12+14 {
			return ReasonTunnelTruncated
		}
		if b[hl+11]&1 != 0 {
			hl += 8 // the platform-specific subheader
		}
		return o.decodeEthernetIn(p, b, hl+12)
	case pt&0xFF0F == 0x8200 || (pt&0xFF0F == 0x8300 && pt <= 0x8370) || pt == 0x9000:
		return o.decode80211(p, b[hl:])
	}
	return o.decodeEtherType(p, pt, b[hl:])
}

// decodeEthernetIn decodes the Ethernet frame at b[off:], which Zeek
// wants longer than an Ethernet header.
func (o *DecodeOptions) decodeEthernetIn(p *Packet, b []byte, off int) Reason {
	if len(b) <= off+14 {
		return ReasonTunnelTruncated
	}
	return o.decodeEthernet(p, b[off:])
}

// decode80211 decodes an 802.11 data frame as Zeek does for Aruba's GRE:
// the header (a fourth address when both DS bits are set; QoS control),
// then LLC/SNAP and an EtherType. Of an A-MSDU it decodes the first
// subframe: one frame is one packet here, where Zeek counts each
// subframe. Protected frames carry nothing readable.
func (o *DecodeOptions) decode80211(p *Packet, b []byte) Reason {
	hl := 24
	if len(b) <= hl {
		return ReasonTunnelTruncated
	}
	fc := b[0]
	if fc&0x08 == 0 || fc&0x40 != 0 {
		return ReasonNotIP // management, control, or a data subtype with no data
	}
	if b[1]&3 == 3 {
		hl += 6
	}
	amsdu := false
	if fc&0x80 != 0 {
		if len(b) <= hl {
			return ReasonTunnelTruncated
		}
		amsdu = b[hl]&0x80 != 0
		if b[1]&0x40 != 0 {
			return ReasonNotIP
		}
		hl += 2
	}
	if len(b) <= hl {
		return ReasonTunnelTruncated
	}
	b = b[hl:]
	if amsdu {
		if len(b) < 14 {
			return ReasonTunnelTruncated
		}
		n := int(binary.BigEndian.Uint16(b[12:]))
		if len(b) < 14+n {
			return ReasonTunnelTruncated
		}
		b = b[14 : 14+n]
	}
	if len(b) < 8 {
		return ReasonTunnelTruncated
	}
	if b[0] != 0xAA || b[1] != 0xAA || b[2] != 0x03 || b[3] != 0 || b[4] != 0 || b[5] != 0 {
		return ReasonNotIP
	}
	return o.decodeEtherType(p, binary.BigEndian.Uint16(b[6:]), b[8:])
}
