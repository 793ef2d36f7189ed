package capture

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Key is a flow's 5-tuple: the two endpoints and the IP protocol. It is a
// comparable value (usable as a map key) built on net/netip.
//
// For ICMP and ICMPv6 the ports are set as Zeek sets them: SrcPort is the
// message type and DstPort the type of its reply (echo request 8 -> 0), or
// the code for messages that have no reply, so a request and its reply are
// one flow. For non-first IP fragments, which carry no transport header,
// both ports are zero and the packet is marked with Packet.Fragment.
type Key struct {
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16
	Proto            uint8
}

// KeySize is the length of a Key's binary layout.
const KeySize = 40

// Binary layout of a Key (KeySize bytes, shared with the eBPF program):
//
//	offset size field
//	0      16   Src address (IPv4 as an IPv4-mapped IPv6 address)
//	16     16   Dst address
//	32     2    SrcPort, big endian
//	34     2    DstPort, big endian
//	36     1    Proto
//	37     1    address family: 4, 6, or 0 for the zero Key
//	38     2    zero
//
// The layout is fixed: the flow hash is computed over it, so changing it
// changes every hash (TestHashPinned guards that).

// IsValid reports whether both addresses are valid and of the same family.
func (k Key) IsValid() bool {
	return k.Src.IsValid() && k.Dst.IsValid() && k.Src.Is4() == k.Dst.Is4()
}

// Reverse returns the key seen from the other side.
func (k Key) Reverse() Key {
	return Key{Src: k.Dst, Dst: k.Src, SrcPort: k.DstPort, DstPort: k.SrcPort, Proto: k.Proto}
}

// Canonical returns the direction-free form of k, in which the endpoint
// (address, port) that sorts first is Src, and reports whether k had to be
// reversed to get it. Both directions of a flow share one canonical key.
func (k Key) Canonical() (c Key, reversed bool) {
	if c := k.Src.Compare(k.Dst); c > 0 || (c == 0 && k.SrcPort > k.DstPort) {
		return k.Reverse(), true
	}
	return k, false
}

// Compare orders keys by Src, Dst, SrcPort, DstPort, Proto.
func (k Key) Compare(o Key) int {
	if c := k.Src.Compare(o.Src); c != 0 {
		return c
	}
	if c := k.Dst.Compare(o.Dst); c != 0 {
		return c
	}
	switch {
	case k.SrcPort != o.SrcPort:
		return cmpInt(int(k.SrcPort), int(o.SrcPort))
	case k.DstPort != o.DstPort:
		return cmpInt(int(k.DstPort), int(o.DstPort))
	}
	return cmpInt(int(k.Proto), int(o.Proto))
}

func cmpInt(a, b int) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

// String formats the key as "proto src:port -> dst:port", with IPv6
// addresses in brackets.
func (k Key) String() string {
	return fmt.Sprintf("%s %s -> %s", ProtoName(k.Proto),
		netip.AddrPortFrom(k.Src, k.SrcPort), netip.AddrPortFrom(k.Dst, k.DstPort))
}

// PutBinary writes k's binary layout into b.
func (k Key) PutBinary(b *[KeySize]byte) {
	*b = [KeySize]byte{}
	if !k.Src.IsValid() && !k.Dst.IsValid() {
		return
	}
	s, d := k.Src.As16(), k.Dst.As16()
	copy(b[0:16], s[:])
	copy(b[16:32], d[:])
	binary.BigEndian.PutUint16(b[32:], k.SrcPort)
	binary.BigEndian.PutUint16(b[34:], k.DstPort)
	b[36] = k.Proto
	b[37] = 6
	if k.Src.Is4() {
		b[37] = 4
	}
}

// AppendBinary appends k's binary layout to b.
func (k Key) AppendBinary(b []byte) ([]byte, error) {
	var a [KeySize]byte
	k.PutBinary(&a)
	return append(b, a[:]...), nil
}

// MarshalBinary returns k's binary layout.
func (k Key) MarshalBinary() ([]byte, error) { return k.AppendBinary(nil) }

// UnmarshalBinary sets k from its binary layout.
func (k *Key) UnmarshalBinary(b []byte) error {
	if len(b) != KeySize {
		return fmt.Errorf("unmarshal key: length %d, want %d", len(b), KeySize)
	}
	var nk Key
	switch b[37] {
	case 0:
		*k = Key{}
		return nil
	case 4:
		nk.Src = netip.AddrFrom4([4]byte(b[12:16]))
		nk.Dst = netip.AddrFrom4([4]byte(b[28:32]))
	case 6:
		nk.Src = netip.AddrFrom16([16]byte(b[0:16]))
		nk.Dst = netip.AddrFrom16([16]byte(b[16:32]))
	default:
		return fmt.Errorf("unmarshal key: address family %d", b[37])
	}
	nk.SrcPort = binary.BigEndian.Uint16(b[32:])
	nk.DstPort = binary.BigEndian.Uint16(b[34:])
	nk.Proto = b[36]
	*k = nk
	return nil
}

// Hash returns the flow hash of k: XXH3-64 with HashSeed over the binary
// layout of k's canonical form, so both directions hash alike and the value
// is the same in every process and on every machine.
func (k Key) Hash() uint64 {
	c, _ := k.Canonical()
	var b [KeySize]byte
	c.PutBinary(&b)
	return hashKeyBytes(&b)
}

// ProtoName names the common IP protocols and prints others as numbers.
func ProtoName(p uint8) string {
	switch p {
	case ProtoICMP:
		return "icmp"
	case ProtoTCP:
		return "tcp"
	case ProtoUDP:
		return "udp"
	case ProtoICMPv6:
		return "icmp6"
	case ProtoSCTP:
		return "sctp"
	case ProtoGRE:
		return "gre"
	case ProtoESP:
		return "esp"
	}
	return fmt.Sprintf("proto-%d", p)
}

// IP protocol numbers flowmon names.
const (
	ProtoICMP   = 1
	ProtoTCP    = 6
	ProtoUDP    = 17
	ProtoGRE    = 47
	ProtoESP    = 50
	ProtoICMPv6 = 58
	ProtoSCTP   = 132
)
