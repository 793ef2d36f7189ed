package gen

import (
	"encoding/binary"
	"math/rand/v2"
)

// Link-layer addresses of the two sides of the monitored link: packets
// from originators go macA -> macB, replies macB -> macA.
var (
	macA = [6]byte{0x02, 0x00, 0x5e, 0x10, 0x00, 0x01}
	macB = [6]byte{0x02, 0x00, 0x5e, 0x10, 0x00, 0x02}
)

// payloadTable is the source of payload bytes: the payload of a packet
// starting at sequence number s of a flow with salt x is
// payloadTable[(s+x)%32768:][:len]. Fixed bytes make a SPAN duplicate
// re-renderable from its descriptor.
var payloadTable = func() []byte {
	b := make([]byte, 1<<15+bufSize)
	r := rand.New(rand.NewPCG(0x666c6f77, 0x6d6f6e))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}()

const (
	tcpHeaderLen = 20
	synOptsLen   = 12 // MSS(4) SACK-permitted(2) NOP(1) window scale(3) NOP NOP
	udpHeaderLen = 8
	icmpEchoLen  = 8
	ethHeaderLen = 14
	ethMinFrame  = 60 // without FCS: shorter frames are zero padded
)

// render writes p, a packet of f, into g.buf and returns its wire length.
// ttlDelta is subtracted from the TTL / hop limit (SPAN copy after a
// router); every length and checksum is computed for the full packet.
func (g *Generator) render(f *flow, p *pkt, ttlDelta uint8) int {
	b := g.buf[:]
	off := 0
	if g.opt.Link == LinkEthernet {
		dst, src := macB, macA
		if p.resp {
			dst, src = macA, macB
		}
		copy(b[0:6], dst[:])
		copy(b[6:12], src[:])
		et := uint16(0x0800)
		if f.v6 {
			et = 0x86dd
		}
		binary.BigEndian.PutUint16(b[12:], et)
		off = ethHeaderLen
	}
	var l4 int
	switch f.proto {
	case protoTCP:
		l4 = tcpHeaderLen
		if p.synOpts {
			l4 += synOptsLen
		}
	case protoUDP:
		l4 = udpHeaderLen
	default:
		l4 = icmpEchoLen
	}
	plen := int(p.plen)
	ipLen := 20
	if f.v6 {
		ipLen = 40
	}
	seg := l4 + plen // transport segment length
	total := ipLen + seg
	ip := b[off : off+total]
	srcA, dstA := &f.cRaw, &f.sRaw
	sport, dport, ttl, win := f.cPort, f.sPort, f.cTTL, f.cWin
	if p.resp {
		srcA, dstA = &f.sRaw, &f.cRaw
		sport, dport, ttl, win = f.sPort, f.cPort, f.sTTL, f.sWin
	}
	ttl -= min(ttlDelta, ttl-1)
	var pseudo uint64 // pseudo-header sum (RFC 793 / RFC 8200 §8.1)
	if !f.v6 {
		ip[0], ip[1] = 0x45, 0
		binary.BigEndian.PutUint16(ip[2:], uint16(total))
		binary.BigEndian.PutUint16(ip[4:], p.ipid)
		binary.BigEndian.PutUint16(ip[6:], 0x4000) // DF
		ip[8], ip[9] = ttl, f.proto
		ip[10], ip[11] = 0, 0
		copy(ip[12:16], srcA[:4])
		copy(ip[16:20], dstA[:4])
		binary.BigEndian.PutUint16(ip[10:], checksum(ip[:20], 0))
		pseudo = sum16(ip[12:20], uint64(f.proto)+uint64(seg))
	} else {
		binary.BigEndian.PutUint32(ip[0:], 6<<28|f.label)
		binary.BigEndian.PutUint16(ip[4:], uint16(seg))
		ip[6], ip[7] = f.proto, ttl
		copy(ip[8:24], srcA[:])
		copy(ip[24:40], dstA[:])
		pseudo = sum16(ip[8:40], uint64(f.proto)+uint64(seg))
	}
	t := ip[ipLen:]
	copy(t[l4:seg], payloadTable[(p.seq+f.salt)&(1<<15-1):])
	switch f.proto {
	case protoTCP:
		binary.BigEndian.PutUint16(t[0:], sport)
		binary.BigEndian.PutUint16(t[2:], dport)
		binary.BigEndian.PutUint32(t[4:], p.seq)
		binary.BigEndian.PutUint32(t[8:], p.ack)
		t[12], t[13] = byte(l4/4)<<4, p.flags
		binary.BigEndian.PutUint16(t[14:], win)
		t[16], t[17], t[18], t[19] = 0, 0, 0, 0
		if p.synOpts {
			o := t[20:32]
			o[0], o[1] = 2, 4 // MSS
			binary.BigEndian.PutUint16(o[2:], f.mss)
			o[4], o[5], o[6] = 4, 2, 1 // SACK permitted, NOP
			o[7], o[8], o[9] = 3, 3, 7 // window scale 7
			o[10], o[11] = 1, 1        // NOP NOP
		}
		binary.BigEndian.PutUint16(t[16:], checksum(t[:seg], pseudo))
	case protoUDP:
		binary.BigEndian.PutUint16(t[0:], sport)
		binary.BigEndian.PutUint16(t[2:], dport)
		binary.BigEndian.PutUint16(t[4:], uint16(seg))
		t[6], t[7] = 0, 0
		c := checksum(t[:seg], pseudo)
		if c == 0 {
			c = 0xffff // RFC 768: a computed zero is sent as all ones
		}
		binary.BigEndian.PutUint16(t[6:], c)
	default: // ICMP / ICMPv6 echo request or reply
		typ := uint8(8)
		switch {
		case f.v6 && p.resp:
			typ = 129
		case f.v6:
			typ = 128
		case p.resp:
			typ = 0
		}
		t[0], t[1], t[2], t[3] = typ, 0, 0, 0
		binary.BigEndian.PutUint16(t[4:], f.icmpID)
		binary.BigEndian.PutUint16(t[6:], uint16(p.seq))
		if !f.v6 {
			pseudo = 0 // ICMPv4 has no pseudo-header
		}
		binary.BigEndian.PutUint16(t[2:], checksum(t[:seg], pseudo))
	}
	n := off + total
	if off > 0 && n < ethMinFrame {
		clear(b[n:ethMinFrame])
		n = ethMinFrame
	}
	return n
}

// sum16 adds b as big-endian 16-bit words to acc (RFC 1071), eight bytes
// at a time; the carries are folded by checksum.
func sum16(b []byte, acc uint64) uint64 {
	for len(b) >= 8 {
		acc += uint64(binary.BigEndian.Uint32(b)) + uint64(binary.BigEndian.Uint32(b[4:]))
		b = b[8:]
	}
	for len(b) >= 2 {
		acc += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint64(b[0]) << 8
	}
	return acc
}

// checksum returns the Internet checksum of b plus the partial sum acc.
func checksum(b []byte, acc uint64) uint16 {
	acc = sum16(b, acc)
	for acc>>16 != 0 {
		acc = acc&0xffff + acc>>16
	}
	return ^uint16(acc)
}
