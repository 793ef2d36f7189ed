package capture

import (
	"strings"
	"time"
)

// TCPFlags holds a TCP header's flag bits, with NS (from the data-offset
// byte) as bit 8.
type TCPFlags uint16

// TCP flag bits.
const (
	FIN TCPFlags = 1 << iota
	SYN
	RST
	PSH
	ACK
	URG
	ECE
	CWR
	NS
)

// Has reports whether every bit of m is set.
func (f TCPFlags) Has(m TCPFlags) bool { return f&m == m }

// String spells the set flags as tcpdump does: S, F, R, P, ., U, E, W, N;
// "none" when no flag is set.
func (f TCPFlags) String() string {
	if f == 0 {
		return "none"
	}
	var b strings.Builder
	for _, x := range []struct {
		f TCPFlags
		c byte
	}{{SYN, 'S'}, {FIN, 'F'}, {RST, 'R'}, {PSH, 'P'}, {ACK, '.'}, {URG, 'U'}, {ECE, 'E'}, {CWR, 'W'}, {NS, 'N'}} {
		if f&x.f != 0 {
			b.WriteByte(x.c)
		}
	}
	return b.String()
}

// Packet is one decoded packet. The decoder fills it in place: a Packet is
// meant to be reused, and Payload points into the buffer (or file
// mapping) it was decoded from, valid only until the source's next Next.
type Packet struct {
	// Timestamp is the capture time: the "now" of every structure that ages.
	Timestamp time.Time
	// Key is the canonical (direction-free) flow key; Reversed says the
	// packet travelled from Key.Dst to Key.Src.
	Key      Key
	Reversed bool
	// fragData is, for a fragment, the offset of its data from the start
	// of its IP header (FragmentIP); it sits in Reversed's padding.
	fragData uint16
	// Tunnels is how many tunnels the packet was decapsulated from (0:
	// none; Key and the fields below are then the innermost packet's), and
	// Tunnel, when Tunnels > 0, the innermost tunnel's kind. They sit in
	// Reversed's padding, with CarrierOnly.
	Tunnels uint8
	Tunnel  TunnelKind
	// CarrierOnly says the packet is a datagram of a UDP tunnel (not
	// Teredo's) that carries no packet: its UDP flow is a carrier's, which
	// the pipeline keeps with the flows it carries.
	CarrierOnly bool
	// Hash is Key.Hash(): one 64-bit hash per packet, reused by every stage.
	Hash uint64

	LinkType  uint16 // pcap LINKTYPE_ value the packet was decoded as
	EtherType uint16 // network layer: 0x0800 IPv4, 0x86DD IPv6
	VLANs     uint8  // number of 802.1Q/802.1ad tags passed

	TTL        uint8  // IPv4 TTL or IPv6 hop limit
	verify     bool   // DecodeOptions.VerifyChecksums, for the decoder's checksum hook
	IPID       uint32 // IPv4 identification, or IPv6 fragment identification
	IPLen      uint16 // IP total length from the header (IPv6: payload length + 40)
	Fragment   FragKind
	HasTCP     bool // Flags/Seq/Ack are valid: a TCP header up to the flags byte was captured
	Flags      TCPFlags
	Seq, Ack   uint32
	Window     uint16
	PayloadLen uint32 // transport payload length, from the IP length (not what was captured)

	WireLen uint32 // length on the wire
	CapLen  uint32 // length captured
	// ipTail is, for a fragment, how many bytes of the frame its IP
	// header starts from the end (FragmentIP); in CapLen's padding.
	ipTail uint32

	// Carriers, when Tunnels > 0, are the flows that carried the packet
	// (see Carriers); otherwise they mean nothing and may point at an
	// earlier packet's. They are kept out of the Packet, which every
	// stage copies, because only tunnelled packets have them: the decoder
	// writes them into a Carriers of the Packet's own, made the first time
	// the Packet holds a tunnelled packet and reused after, so like
	// Payload they are valid until the Packet is decoded into again. A
	// copy kept longer copies them too (the pipeline's batches do).
	Carriers *Carriers

	// Payload is the captured part of the transport payload (may be shorter
	// than PayloadLen on truncated captures).
	Payload []byte
}

// Directed returns the packet's key in the direction it travelled.
func (p *Packet) Directed() Key {
	if p.Reversed {
		return p.Key.Reverse()
	}
	return p.Key
}

// FragKind says whether a packet is an IP fragment.
type FragKind uint8

const (
	NotFragment   FragKind = iota
	FirstFragment          // offset 0, more fragments: ports are known
	LaterFragment          // offset > 0: keyed on addresses and protocol, ports 0
)
