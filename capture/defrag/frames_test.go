package defrag

import (
	"encoding/binary"
	"time"

	"github.com/flowmon/flowmon/capture"
)

// Datagrams and their fragments, built byte by byte so that the tests
// choose every offset, length and overlap.

var t0 = time.Unix(1700000000, 0)

// checksum is the IPv4 header checksum of h with its checksum field
// taken as 0 (RFC 1071), written apart from the package's.
func checksum(h []byte) uint16 {
	var s uint32
	for i := 0; i < len(h); i += 2 {
		if i == 10 {
			continue
		}
		s += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// udp returns a UDP header and n payload bytes of a pattern seeded by
// seed (the checksum is left 0: flowmon does not check it).
func udp(sport, dport uint16, n int, seed byte) []byte {
	b := make([]byte, 8+n)
	binary.BigEndian.PutUint16(b[0:], sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	binary.BigEndian.PutUint16(b[4:], uint16(min(8+n, 0xffff)))
	for i := range n {
		b[8+i] = seed + byte(i*7)
	}
	return b
}

// ip4 returns an IPv4 datagram (no options unless opts) carrying payload,
// unfragmented, with a valid checksum.
func ip4(src, dst [4]byte, id uint16, proto uint8, opts []byte, payload []byte) []byte {
	hl := 20 + len(opts)
	b := make([]byte, hl+len(payload))
	b[0] = 0x40 | byte(hl/4)
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	binary.BigEndian.PutUint16(b[4:], id)
	b[8], b[9] = 64, proto
	copy(b[12:], src[:])
	copy(b[16:], dst[:])
	copy(b[20:], opts)
	copy(b[hl:], payload)
	binary.BigEndian.PutUint16(b[10:], checksum(b[:hl]))
	return b
}

// piece is one fragment to make: data [off, off+n) of the datagram, with
// more set or not; data, when set, replaces the datagram's bytes (an
// overlap that disagrees).
type piece struct {
	off, n int
	more   bool
	data   []byte
}

// frag4 makes the fragment pc of IPv4 datagram d as an Ethernet frame.
func frag4(d []byte, pc piece) []byte {
	hl := int(d[0]&0xf) * 4
	data := pc.data
	if data == nil {
		data = d[hl+pc.off : hl+pc.off+pc.n]
	}
	ip := make([]byte, hl+len(data))
	copy(ip, d[:hl])
	copy(ip[hl:], data)
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
	fo := uint16(pc.off / 8)
	if pc.more {
		fo |= 0x2000
	}
	binary.BigEndian.PutUint16(ip[6:], fo)
	binary.BigEndian.PutUint16(ip[10:], checksum(ip[:hl]))
	return ether(0x0800, ip)
}

func ether(et uint16, ip []byte) []byte {
	f := make([]byte, 14+len(ip))
	copy(f, []byte{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2})
	binary.BigEndian.PutUint16(f[12:], et)
	copy(f[14:], ip)
	return f
}

// ip6 returns an IPv6 datagram: the fixed header, the extension headers
// exts (each a next-header-less body, padded here to 8-byte units; the
// type of each is in types), then payload of protocol proto.
func ip6(src, dst [16]byte, types []uint8, exts [][]byte, proto uint8, payload []byte) []byte {
	b := make([]byte, 40)
	b[0] = 0x60
	b[7] = 64
	copy(b[8:], src[:])
	copy(b[24:], dst[:])
	at := 6 // where the next header's type goes
	for i, e := range exts {
		n := (len(e) + 2 + 7) / 8 * 8
		h := make([]byte, n)
		h[1] = byte(n/8 - 1)
		copy(h[2:], e)
		b[at] = types[i]
		at = len(b)
		b = append(b, h...)
	}
	b[at] = proto
	b = append(b, payload...)
	binary.BigEndian.PutUint16(b[4:], uint16(len(b)-40))
	return b
}

// frag6 makes fragment pc of IPv6 datagram d, whose unfragmentable part
// is its first unfrag bytes and nextAt the offset of the byte naming the
// header after it.
func frag6(d []byte, unfrag, nextAt int, id uint32, pc piece) []byte {
	data := pc.data
	if data == nil {
		data = d[unfrag+pc.off : unfrag+pc.off+pc.n]
	}
	ip := make([]byte, unfrag+8+len(data))
	copy(ip, d[:unfrag])
	fh := ip[unfrag:]
	fh[0] = d[nextAt]
	ip[nextAt] = 44
	fo := uint16(pc.off)
	if pc.more {
		fo |= 1
	}
	binary.BigEndian.PutUint16(fh[2:], fo)
	binary.BigEndian.PutUint32(fh[4:], id)
	copy(ip[unfrag+8:], data)
	binary.BigEndian.PutUint16(ip[4:], uint16(len(ip)-40))
	return ether(0x86DD, ip)
}

// split cuts n bytes of data into fragments of at most size bytes (a
// multiple of 8), in order.
func split(n, size int) []piece {
	var ps []piece
	for off := 0; off < n; off += size {
		ps = append(ps, piece{off: off, n: min(size, n-off), more: off+size < n})
	}
	return ps
}

// run decodes each frame and hands the fragments to r, as a source does;
// it returns the datagrams r delivered (copies of the reassembled IP
// bytes) and the packets they decoded to.
type delivered struct {
	ip []byte
	p  capture.Packet
}

func run(r *Reassembler, st *capture.DefragStats, frames [][]byte, at func(i int) time.Time) []delivered {
	var out []delivered
	var p capture.Packet
	for i, f := range frames {
		// As a source does: a first fragment too short for its transport
		// header is a piece too.
		if r := capture.Decode(&p, capture.LinkEthernet, f, len(f), at(i)); p.Fragment == capture.NotFragment ||
			r != capture.ReasonNone && r != capture.ReasonTransportTruncated {
			continue
		}
		res, reason := r.Add(&p, f, st)
		if res == capture.FragDone && reason == capture.ReasonNone {
			out = append(out, delivered{ip: append([]byte(nil), r.out[:p.WireLen]...), p: p})
		}
	}
	return out
}

func every(d time.Duration) func(int) time.Time {
	return func(i int) time.Time { return t0.Add(time.Duration(i) * d) }
}
