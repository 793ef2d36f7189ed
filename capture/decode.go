package capture

import (
	"encoding/binary"
	"net/netip"
	"time"
)

// Link types (pcap LINKTYPE_ values) the decoder reads.
const (
	LinkNull     uint16 = 0   // BSD loopback: 4-byte address family in host order
	LinkEthernet uint16 = 1   // Ethernet II, with 802.1Q / 802.1ad / QinQ tags, MPLS, PPPoE
	LinkRaw      uint16 = 101 // raw IPv4 or IPv6, version from the first nibble
	LinkLoop     uint16 = 108 // OpenBSD loopback: address family in network order
	LinkSLL      uint16 = 113 // Linux cooked capture v1
	LinkIPv4     uint16 = 228
	LinkIPv6     uint16 = 229
	LinkNFLOG    uint16 = 239 // Linux NFLOG: a 4-byte header, then attributes (TLVs), the packet among them
	LinkSLL2     uint16 = 276 // Linux cooked capture v2
	linkRawAlt   uint16 = 12  // DLT_RAW as some systems number it
	linkRawAlt14 uint16 = 14
)

// EtherTypes the decoder follows.
const (
	EtherTypeIPv4   = 0x0800
	EtherTypeIPv6   = 0x86DD
	etherTypeARP    = 0x0806
	etherTypeVLAN   = 0x8100
	etherTypeQinQ   = 0x88A8
	etherTypeQinQ2  = 0x9100
	etherTypeMPLS   = 0x8847
	etherTypeMPLSm  = 0x8848
	etherTypePPPoES = 0x8864
	etherTypePBB    = 0x88E7 // 802.1ah: I-TAG, then the customer's Ethernet header
	etherTypeVNTag  = 0x8926
	etherTypeCFP    = 0x8903 // Cisco FabricPath: FTag/TTL, then the inner Ethernet header
	etherTypeNSH    = 0x894F // RFC 8300 network service header
)

// maxLinkHops bounds the VLAN/MPLS tags walked, so a crafted frame of
// endless tags costs a fixed amount of work.
const maxLinkHops = 8

// Decode fills p from one captured frame of the given link type with the
// default options (DefaultDecodeOptions): see DecodeOptions.Decode.
func Decode(p *Packet, link uint16, data []byte, wireLen int, ts time.Time) Reason {
	return defaultDecodeOptions.Decode(p, link, data, wireLen, ts)
}

// decodeOtherLink decodes the link types with a header before the
// network layer other than Ethernet.
func (o *DecodeOptions) decodeOtherLink(p *Packet, link uint16, data []byte) Reason {
	switch link {
	case LinkSLL:
		if len(data) < 16 {
			return ReasonLinkTruncated
		}
		return o.decodeEtherType(p, binary.BigEndian.Uint16(data[14:]), data[16:])
	case LinkSLL2:
		if len(data) < 20 {
			return ReasonLinkTruncated
		}
		return o.decodeEtherType(p, binary.BigEndian.Uint16(data[0:]), data[20:])
	case LinkNull, LinkLoop:
		if len(data) < 4 {
			return ReasonLinkTruncated
		}
		fam := binary.LittleEndian.Uint32(data)
		if link == LinkLoop || fam > 0xFFFF {
			fam = binary.BigEndian.Uint32(data)
		}
		switch fam {
		case 2:
			return o.decodeIPv4(p, data[4:])
		case 10, 24, 28, 30: // AF_INET6 on Linux, the BSDs and Darwin
			return o.decodeIPv6(p, data[4:])
		}
		return ReasonNotIP
	case LinkNFLOG:
		return o.decodeNFLOG(p, data)
	}
	return ReasonLinkUnsupported
}

// NFLOG attribute types (linux/netfilter/nfnetlink_log.h).
const (
	nflogPayload  = 9      // NFULA_PAYLOAD: the packet, from its network header
	nflogTypeMask = 0x3FFF // without netlink's nested and byte order flags
)

// decodeNFLOG decodes a Linux NFLOG record: the address family (AF_INET
// 2, AF_INET6 10), a version (0) and a resource id, then attributes of a
// 16-bit length (the 4-byte attribute header included) and a 16-bit
// type, each padded to 4 bytes. Length and type are in the byte order of
// the host that logged, which the record does not say: an attribute
// header that does not fit read little-endian is read big-endian, as
// Wireshark guesses, and the order of the first attribute holds for the
// rest. The packet is the payload attribute's value.
func (o *DecodeOptions) decodeNFLOG(p *Packet, b []byte) Reason {
	if len(b) < 4 {
		return ReasonLinkTruncated
	}
	fam := b[0]
	if b[1] != 0 {
		return ReasonNFLOGHeader
	}
	var order binary.ByteOrder = binary.LittleEndian
	if len(b) >= 8 {
		if n := int(order.Uint16(b[4:])); n < 4 || n > len(b)-4 {
			order = binary.BigEndian
		}
	}
	for b = b[4:]; len(b) > 0; {
		if len(b) < 4 {
			return ReasonNFLOGHeader
		}
		n, typ := int(order.Uint16(b)), order.Uint16(b[2:])&nflogTypeMask
		if n < 4 || n > len(b) {
			return ReasonNFLOGHeader
		}
		if typ == nflogPayload {
			switch fam {
			case 2:
				return o.decodeIPv4(p, b[4:n])
			case 10:
				return o.decodeIPv6(p, b[4:n])
			}
			return ReasonNotIP
		}
		b = b[min(len(b), (n+3)&^3):]
	}
	return ReasonNFLOGHeader
}

func (o *DecodeOptions) decodeEthernet(p *Packet, b []byte) Reason {
	if len(b) < 14 {
		return ReasonLinkTruncated
	}
	return o.decodeEtherType(p, binary.BigEndian.Uint16(b[12:]), b[14:])
}

// decodeEtherType walks VLAN tags, MPLS labels, PBB, VN-tag and FabricPath
// headers and a PPPoE session header to the IP header.
func (o *DecodeOptions) decodeEtherType(p *Packet, et uint16, b []byte) Reason {
	for range maxLinkHops {
		switch et {
		case EtherTypeIPv4:
			return o.decodeIPv4(p, b)
		case EtherTypeIPv6:
			return o.decodeIPv6(p, b)
		case etherTypeVLAN, etherTypeQinQ, etherTypeQinQ2:
			if len(b) < 4 {
				return ReasonLinkTruncated
			}
			p.VLANs++
			et, b = binary.BigEndian.Uint16(b[2:]), b[4:]
		case etherTypeMPLS, etherTypeMPLSm:
			// Labels until the bottom-of-stack bit; the payload's protocol
			// is not named, so read it from the IP version nibble.
			for i := 0; ; i++ {
				if len(b) < 4 || i == maxLinkHops {
					return ReasonLinkTruncated
				}
				bottom := b[2]&1 != 0
				b = b[4:]
				if bottom {
					return o.decodeIPByVersion(p, b)
				}
			}
		case etherTypePPPoES:
			if len(b) < 8 {
				return ReasonLinkTruncated
			}
			switch binary.BigEndian.Uint16(b[6:]) {
			case 0x0021:
				return o.decodeIPv4(p, b[8:])
			case 0x0057:
				return o.decodeIPv6(p, b[8:])
			}
			return ReasonNotIP
		case etherTypePBB:
			if len(b) < 18 {
				return ReasonLinkTruncated
			}
			et, b = binary.BigEndian.Uint16(b[16:]), b[18:]
		case etherTypeVNTag:
			if len(b) < 6 {
				return ReasonLinkTruncated
			}
			et, b = binary.BigEndian.Uint16(b[4:]), b[6:]
		case etherTypeCFP:
			if len(b) < 16 {
				return ReasonLinkTruncated
			}
			et, b = binary.BigEndian.Uint16(b[14:]), b[16:]
		case etherTypeNSH:
			var r Reason
			if et, b, r = nshHeader(b); r != ReasonNone {
				p.EtherType = etherTypeNSH
				return r
			}
		default:
			p.EtherType = et
			return ReasonNotIP
		}
	}
	return ReasonLinkTruncated
}

// NSH next protocols (RFC 8300 section 2.2; VXLAN-GPE's are the same).
const (
	nshNextIPv4     = 1
	nshNextIPv6     = 2
	nshNextEthernet = 3
	nshNextNSH      = 4
	nshNextMPLS     = 5
)

// nshHeader reads an RFC 8300 network service header at b: version (2
// bits, 0), the length of the base, service path and context headers in
// 4-byte words (6 bits of the second byte; at least 2), the next
// protocol (the fourth byte). It returns what follows as an EtherType
// and its bytes for decodeEtherType's walk (an inner Ethernet frame's
// own EtherType, so that the walk goes on without a call deeper), or
// ReasonNotIP for a next protocol that carries no packet flowmon reads.
func nshHeader(b []byte) (uint16, []byte, Reason) {
	if len(b) < 8 || b[0]>>6 != 0 {
		return 0, nil, ReasonNSHHeader
	}
	hl := int(b[1]&0x3F) * 4
	if hl < 8 || len(b) < hl {
		return 0, nil, ReasonNSHHeader
	}
	next := b[3]
	b = b[hl:]
	switch next {
	case nshNextIPv4:
		return EtherTypeIPv4, b, ReasonNone
	case nshNextIPv6:
		return EtherTypeIPv6, b, ReasonNone
	case nshNextNSH:
		return etherTypeNSH, b, ReasonNone
	case nshNextMPLS:
		return etherTypeMPLS, b, ReasonNone
	case nshNextEthernet:
		if len(b) < 14 {
			return 0, nil, ReasonLinkTruncated
		}
		return binary.BigEndian.Uint16(b[12:]), b[14:], ReasonNone
	}
	return 0, nil, ReasonNotIP
}

func (o *DecodeOptions) decodeIPByVersion(p *Packet, b []byte) Reason {
	if len(b) < 1 {
		return ReasonIPTruncated
	}
	switch b[0] >> 4 {
	case 4:
		return o.decodeIPv4(p, b)
	case 6:
		return o.decodeIPv6(p, b)
	}
	return ReasonIPVersion
}

func (o *DecodeOptions) decodeIPv4(p *Packet, b []byte) Reason {
	p.EtherType = EtherTypeIPv4
	if len(b) < 20 {
		return ReasonIPTruncated
	}
	if b[0]>>4 != 4 {
		return ReasonIPVersion
	}
	hl := int(b[0]&0x0F) * 4
	if hl < 20 {
		return ReasonIPHeaderLength
	}
	if len(b) < hl {
		return ReasonIPTruncated
	}
	if p.verify && !ipv4HeaderOK(b[:hl]) {
		return ReasonBadIPChecksum
	}
	total := int(binary.BigEndian.Uint16(b[2:]))
	if total == 0 {
		// TCP segmentation offload: the stack left the length for the NIC
		// to fill. Take what was captured, as tcpdump does.
		total = len(b)
	}
	if total < hl {
		return ReasonIPTotalLength
	}
	p.IPLen = uint16(total)
	p.IPID = uint32(binary.BigEndian.Uint16(b[4:]))
	p.TTL = b[8]
	proto := b[9]
	src, dst := b[12:16], b[16:20]
	frag := binary.BigEndian.Uint16(b[6:])
	payload := b[hl:min(len(b), total)] // drop Ethernet padding
	payloadLen := total - hl
	if off := frag & 0x1FFF; off != 0 {
		p.Fragment = LaterFragment
		p.markFragment(b, hl)
		return finishKeyOnly(p, src, dst, proto, payload, payloadLen)
	}
	if frag&0x2000 != 0 {
		p.Fragment = FirstFragment
		p.markFragment(b, hl)
	}
	if proto == protoAH {
		var r Reason
		if proto, payload, payloadLen, r = skipAH(payload, payloadLen); r != ReasonNone {
			return r
		}
	}
	return o.decodeTransport(p, src, dst, proto, payload, payloadLen, false)
}

// protoAH is IPsec's authentication header (RFC 4302), in IPv4 as in
// IPv6 (ipv6AH, where the extension header walk passes it).
const protoAH = 51

// skipAH passes the authentication headers at the start of an IPv4
// payload b (payloadLen long by the IP header), as the IPv6 walk does:
// the flow is the protocol after them, whose ports AH leaves in the
// clear (ESP, which hides them, is a flow of protocol 50 without ports).
// An AH's length is its payload length field plus 2, in 4-byte words.
func skipAH(b []byte, payloadLen int) (uint8, []byte, int, Reason) {
	proto := uint8(protoAH)
	for range maxIPv6Header {
		if proto != protoAH {
			return proto, b, payloadLen, ReasonNone
		}
		if len(b) < 2 {
			return 0, nil, 0, ReasonAHTruncated
		}
		hl := (int(b[1]) + 2) * 4
		if len(b) < hl {
			return 0, nil, 0, ReasonAHTruncated
		}
		proto, b, payloadLen = b[0], b[hl:], payloadLen-hl
	}
	return 0, nil, 0, ReasonAHTruncated
}

// IPv6 extension headers the decoder walks.
const (
	ipv6HopByHop  = 0
	ipv6Routing   = 43
	ipv6Fragment  = 44
	ipv6AH        = protoAH
	ipv6DestOpts  = 60
	ipv6Mobility  = 135
	ipv6HIP       = 139
	ipv6Shim6     = 140
	maxIPv6Header = 16 // extension headers walked before giving up
)

func (o *DecodeOptions) decodeIPv6(p *Packet, b []byte) Reason {
	p.EtherType = EtherTypeIPv6
	if len(b) < 40 {
		return ReasonIPTruncated
	}
	if b[0]>>4 != 6 {
		return ReasonIPVersion
	}
	plen := int(binary.BigEndian.Uint16(b[4:]))
	if plen == 0 {
		plen = len(b) - 40 // jumbogram or offloaded length: use the capture
	}
	p.IPLen = uint16(min(plen+40, 0xFFFF))
	p.TTL = b[7]
	src, dst := b[8:24], b[24:40]
	next := b[6]
	rest := b[40:min(len(b), 40+plen)]
	payloadLen := plen
	for range maxIPv6Header {
		var hl int
		switch next {
		case ipv6HopByHop, ipv6Routing, ipv6DestOpts, ipv6Mobility, ipv6HIP, ipv6Shim6:
			if len(rest) < 2 {
				return ReasonIPv6ExtTruncated
			}
			hl = (int(rest[1]) + 1) * 8
		case ipv6AH:
			if len(rest) < 2 {
				return ReasonIPv6ExtTruncated
			}
			hl = (int(rest[1]) + 2) * 4
		case ipv6Fragment:
			if len(rest) < 8 {
				return ReasonIPv6ExtTruncated
			}
			off := binary.BigEndian.Uint16(rest[2:])
			p.IPID = binary.BigEndian.Uint32(rest[4:])
			next = rest[0]
			rest, payloadLen = rest[8:], payloadLen-8
			if off>>3 != 0 {
				p.Fragment = LaterFragment
				p.markFragment(b, cap(b)-cap(rest))
				return finishKeyOnly(p, src, dst, next, rest, payloadLen)
			}
			if off&1 != 0 {
				p.Fragment = FirstFragment
				p.markFragment(b, cap(b)-cap(rest))
			}
			continue
		default:
			return o.decodeTransport(p, src, dst, next, rest, payloadLen, true)
		}
		if len(rest) < hl {
			return ReasonIPv6ExtTruncated
		}
		next = rest[0]
		rest, payloadLen = rest[hl:], payloadLen-hl
	}
	return ReasonIPv6ExtTruncated
}

// decodeTransport reads the transport header's ports (or ICMP type and
// code) and, for TCP, the flags and sequence numbers. payloadLen is the
// transport segment's length according to the IP header; b is what was
// captured of it.
func (o *DecodeOptions) decodeTransport(p *Packet, src, dst []byte, proto uint8, b []byte, payloadLen int, v6 bool) Reason {
	var sport, dport uint16
	hdr := 0
	switch proto {
	case ProtoTCP:
		// CAIDA-style traces cut the header short: keep the packet when
		// the flags byte (offset 13) made it.
		if len(b) < 14 {
			return ReasonTransportTruncated
		}
		sport, dport = binary.BigEndian.Uint16(b[0:]), binary.BigEndian.Uint16(b[2:])
		off := int(b[12]>>4) * 4
		if off < 20 {
			return ReasonTCPDataOffset
		}
		p.HasTCP = true
		p.Seq = binary.BigEndian.Uint32(b[4:])
		p.Ack = binary.BigEndian.Uint32(b[8:])
		p.Flags = TCPFlags(b[13]) | TCPFlags(b[12]&1)<<8
		if len(b) >= 16 {
			p.Window = binary.BigEndian.Uint16(b[14:])
		}
		hdr = off
	case ProtoUDP, ProtoSCTP, udpLite, dccp:
		if len(b) < 4 {
			return ReasonTransportTruncated
		}
		sport, dport = binary.BigEndian.Uint16(b[0:]), binary.BigEndian.Uint16(b[2:])
		hdr = 8
		if proto == ProtoSCTP {
			hdr = 12
		}
		if proto == ProtoUDP && payloadLen > 8 && len(b) > 8 {
			if kind := o.udpTunnel(sport, dport, b[8:]); kind != TunnelNone {
				if r, ok := o.decodeUDPTunnel(p, kind, src, dst, sport, dport, b[8:], payloadLen-8); ok {
					return r
				}
				p.CarrierOnly = kind != TunnelTeredo
			}
		}
	case ProtoICMP, ProtoICMPv6:
		if len(b) < 2 {
			return ReasonTransportTruncated
		}
		sport, dport = icmpPorts(b[0], b[1], proto == ProtoICMPv6)
		hdr = 8
	case protoIPIP, protoIPv6, ProtoGRE:
		return o.decodeIPTunnel(p, src, dst, proto, b)
	default:
		hdr = 0
	}
	if p.verify && p.Fragment == NotFragment {
		if r := verifyTransport(src, dst, proto, b, payloadLen); r != ReasonNone {
			return r
		}
	}
	if payloadLen > hdr {
		p.PayloadLen = uint32(payloadLen - hdr)
		if len(b) > hdr {
			p.Payload = b[hdr:]
		}
	}
	setKey(p, src, dst, sport, dport, proto)
	return ReasonNone
}

// Other transport protocols with ports at the start of their header.
const (
	dccp    = 33
	udpLite = 136
)

// finishKeyOnly keys a non-first fragment on its address pair and protocol.
func finishKeyOnly(p *Packet, src, dst []byte, proto uint8, b []byte, payloadLen int) Reason {
	if payloadLen > 0 {
		p.PayloadLen = uint32(payloadLen)
	}
	p.Payload = b
	setKey(p, src, dst, 0, 0, proto)
	return ReasonNone
}

// setKey sets the canonical key, orientation and flow hash straight from
// the header's address bytes (4 or 16 each). It is Key.Canonical and
// Key.Hash without the detour through netip, which the decoder's budget
// cannot afford; TestSetKeyMatchesKey holds the two equal.
func setKey(p *Packet, src, dst []byte, sport, dport uint16, proto uint8) {
	p.Reversed = fillKey(&p.Key, &p.Hash, src, dst, sport, dport, proto)
}

// fillKey sets k and h to the canonical key and its hash, and reports
// whether the packet went from k.Dst to k.Src.
func fillKey(k *Key, h *uint64, src, dst []byte, sport, dport uint16, proto uint8) (reversed bool) {
	var sh, sl, dh, dl uint64
	var fam byte
	if len(src) == 4 {
		fam = 4
		sl = 0xFFFF<<32 | uint64(binary.BigEndian.Uint32(src))
		dl = 0xFFFF<<32 | uint64(binary.BigEndian.Uint32(dst))
	} else {
		fam = 6
		sh, sl = binary.BigEndian.Uint64(src), binary.BigEndian.Uint64(src[8:])
		dh, dl = binary.BigEndian.Uint64(dst), binary.BigEndian.Uint64(dst[8:])
	}
	if sh > dh || (sh == dh && (sl > dl || (sl == dl && sport > dport))) {
		sh, sl, dh, dl = dh, dl, sh, sl
		sport, dport = dport, sport
		src, dst = dst, src
		reversed = true
	}
	var b [KeySize]byte
	binary.BigEndian.PutUint64(b[0:], sh)
	binary.BigEndian.PutUint64(b[8:], sl)
	binary.BigEndian.PutUint64(b[16:], dh)
	binary.BigEndian.PutUint64(b[24:], dl)
	binary.BigEndian.PutUint64(b[32:], uint64(sport)<<48|uint64(dport)<<32|uint64(proto)<<24|uint64(fam)<<16)
	*h = hashKeyBytes(&b)
	// Field by field, for the reason given at reset.
	if fam == 4 {
		k.Src, k.Dst = netip.AddrFrom4([4]byte(src)), netip.AddrFrom4([4]byte(dst))
	} else {
		k.Src, k.Dst = netip.AddrFrom16([16]byte(src)), netip.AddrFrom16([16]byte(dst))
	}
	k.SrcPort, k.DstPort, k.Proto = sport, dport, proto
	return reversed
}

// icmpPorts maps an ICMP type and code to the flow's ports as Zeek does:
// the source port is the type, the destination port the type of the
// matching reply (so an echo request and its reply are one flow), or the
// code for messages that have no reply.
func icmpPorts(typ, code uint8, v6 bool) (uint16, uint16) {
	if peer, ok := ICMPCounterpart(typ, v6); ok {
		return uint16(typ), uint16(peer)
	}
	return uint16(typ), uint16(code)
}

// ICMPCounterpart is the type of the reply (or request) an ICMP message of
// type t pairs with into one flow, as Zeek pairs them (v6: ICMPv6); ok is
// false for a type without one, whose flow's second port is its code.
func ICMPCounterpart(t uint8, v6 bool) (peer uint8, ok bool) {
	pairs := icmp4Pairs[:]
	if v6 {
		pairs = icmp6Pairs[:]
	}
	return pairOf(pairs, t)
}

// pairOf is t's other in pairs.
func pairOf(pairs [][2]uint8, t uint8) (uint8, bool) {
	for _, pr := range pairs {
		switch t {
		case pr[0]:
			return pr[1], true
		case pr[1]:
			return pr[0], true
		}
	}
	return 0, false
}

var (
	// echo, router, timestamp, information, address mask
	icmp4Pairs = [...][2]uint8{{8, 0}, {10, 9}, {13, 14}, {15, 16}, {17, 18}}
	// echo, MLD query/report, router, neighbor
	icmp6Pairs = [...][2]uint8{{128, 129}, {130, 131}, {133, 134}, {135, 136}}
)

// reset clears p field by field: assigning a whole Packet literal copies a
// pointer-holding struct through a temporary, a large share of the
// decoder's time (docs/results/pipeline.md, "Decoding: the packet reset
// field by field").
func (p *Packet) reset(ts time.Time, link uint16, wireLen, capLen int) {
	p.Timestamp = ts
	p.Reversed = false
	p.Hash = 0
	p.LinkType, p.EtherType, p.VLANs = link, 0, 0
	p.Tunnels, p.Tunnel, p.CarrierOnly = 0, TunnelNone, false
	p.TTL, p.IPID, p.IPLen, p.Fragment = 0, 0, 0, NotFragment
	p.HasTCP, p.Flags, p.Seq, p.Ack, p.Window = false, 0, 0, 0, 0
	p.PayloadLen, p.Payload = 0, nil
	p.WireLen, p.CapLen = uint32(wireLen), uint32(capLen)
}
