package capture

import (
	"encoding/binary"
	"math/bits"
)

// The Internet checksum (RFC 1071) is the ones' complement of the ones'
// complement sum of 16-bit words. That sum does not depend on the byte
// order it is computed in (RFC 1071, 2.(B)), so sum64 adds the data as
// little-endian 64-bit words, eight bytes a step, and fold turns the
// result into the 16-bit sum in network order. A segment whose checksum
// is right sums, checksum field included, to 0xFFFF.

// sum64 adds b to the running sum s (in little-endian word space). b's
// start must be at an even offset of the checksummed data.
func sum64(s uint64, b []byte) uint64 {
	var c uint64
	for len(b) >= 32 {
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(b), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(b[8:]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(b[16:]), c)
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(b[24:]), c)
		b = b[32:]
	}
	for len(b) >= 8 {
		s, c = bits.Add64(s, binary.LittleEndian.Uint64(b), c)
		b = b[8:]
	}
	if len(b) >= 4 {
		s, c = bits.Add64(s, uint64(binary.LittleEndian.Uint32(b)), c)
		b = b[4:]
	}
	if len(b) >= 2 {
		s, c = bits.Add64(s, uint64(binary.LittleEndian.Uint16(b)), c)
		b = b[2:]
	}
	if len(b) == 1 {
		// The last odd byte is the high byte of a word padded with zero:
		// in little-endian word space, its low byte.
		s, c = bits.Add64(s, uint64(b[0]), c)
	}
	s, c = bits.Add64(s, c, 0)
	return s + c // end-around carry; cannot carry again
}

// fold reduces a sum64 to the 16-bit ones' complement sum in network order.
func fold(s uint64) uint16 {
	s = (s >> 32) + (s & 0xFFFFFFFF)
	s = (s >> 32) + (s & 0xFFFFFFFF)
	s = (s >> 16) + (s & 0xFFFF)
	s = (s >> 16) + (s & 0xFFFF)
	return bits.ReverseBytes16(uint16(s))
}

// word is a 16-bit field in network order as sum64 adds it.
func word(v uint16) uint64 { return uint64(bits.ReverseBytes16(v)) }

// ipv4HeaderOK reports whether an IPv4 header (its IHL bytes) sums right.
func ipv4HeaderOK(h []byte) bool { return fold(sum64(0, h)) == 0xFFFF }

// verifyTransport checks the checksum of a whole transport segment b of
// length n (the IP header's), between the addresses src and dst (4 or 16
// bytes each), as Zeek's analyzers do: TCP, UDP and ICMPv6 with the
// pseudo-header, ICMP without; a UDP checksum of 0 over IPv4 means none
// was sent, over IPv6 it is wrong (RFC 8200, 8.1). A segment not captured
// whole (a snap length, a first fragment) cannot be checked and passes,
// as in Zeek; so do the protocols Zeek does not check (SCTP, DCCP,
// UDP-Lite, the others).
func verifyTransport(src, dst []byte, proto uint8, b []byte, n int) Reason {
	var bad Reason
	pseudo := true
	switch proto {
	case ProtoTCP:
		bad = ReasonBadTCPChecksum
	case ProtoUDP:
		if len(b) >= 8 && b[6] == 0 && b[7] == 0 && len(src) == 4 {
			return ReasonNone
		}
		bad = ReasonBadUDPChecksum
	case ProtoICMP:
		bad, pseudo = ReasonBadICMPChecksum, false
	case ProtoICMPv6:
		bad = ReasonBadICMPChecksum
	default:
		return ReasonNone
	}
	if n <= 0 || len(b) < n || n > 0xFFFF {
		return ReasonNone
	}
	b = b[:n]
	var s uint64
	if pseudo {
		s = sum64(sum64(0, src), dst) + word(uint16(n)) + word(uint16(proto))
	}
	if fold(sum64(s, b)) != 0xFFFF {
		return bad
	}
	return ReasonNone
}
