package capture

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
)

// Community ID v1 (github.com/corelight/community-id-spec): a flow hash
// Zeek, Suricata, Arkime and others print, so that flowmon's records and
// alerts join their logs. It is the SHA-1 of the seed (2 bytes), the
// endpoints' addresses, the protocol, a zero byte and, for TCP, UDP,
// SCTP, ICMP and ICMPv6, the ports, all in network byte order, with the
// endpoints ordered smaller address first (then smaller port); "1:" and
// its base64 (or, for tools that ask, its hex). ICMP has no ports: the
// spec takes the type and the type of its counterpart (echo and echo
// reply, ...), which is how flowmon's keys already hold them (Zeek's
// convention), and for a type without a counterpart the type and the
// code, which are not reordered: a one-way message's ID keeps its
// direction.

// CommunityIDLen is the length of a Community ID in base64.
const CommunityIDLen = 2 + 28

// AppendCommunityID appends the Community ID v1 of the flow k, directed
// from its originator (Src sent the flow's first packet), with seed, in
// base64 ("1:...") or, with hexDigest, in hex. It allocates nothing: a
// record writer calls it once a flow.
func AppendCommunityID(b []byte, k *Key, seed uint16, hexDigest bool) []byte {
	var in [2 + 16 + 16 + 2 + 4]byte
	binary.BigEndian.PutUint16(in[:], seed)
	n := 2
	src, dst, sp, dp := k.Src.Unmap(), k.Dst.Unmap(), k.SrcPort, k.DstPort
	ports := false
	switch k.Proto {
	case ProtoTCP, ProtoUDP, ProtoSCTP:
		ports = true
	case ProtoICMP, ProtoICMPv6:
		ports = true
		peer, paired := icmpCounterpart(k.Proto, uint8(sp))
		if !paired {
			goto ordered // the type and the code, in the message's direction
		}
		// The spec's table, which has pairs Zeek's (and so the key's
		// ports) lacks: the key may hold the code where the spec wants
		// the counterpart's type.
		dp = uint16(peer)
	}
	if c := src.Compare(dst); c > 0 || c == 0 && ports && sp > dp {
		src, dst, sp, dp = dst, src, dp, sp
	}
ordered:
	if src.Is4() && dst.Is4() { // a key of mixed families has no spec form: both as IPv6
		a, b := src.As4(), dst.As4()
		n += copy(in[n:], a[:])
		n += copy(in[n:], b[:])
	} else {
		a, b := src.As16(), dst.As16()
		n += copy(in[n:], a[:])
		n += copy(in[n:], b[:])
	}
	in[n], in[n+1] = k.Proto, 0
	n += 2
	if ports {
		binary.BigEndian.PutUint16(in[n:], sp)
		binary.BigEndian.PutUint16(in[n+2:], dp)
		n += 4
	}
	sum := sha1.Sum(in[:n])
	b = append(b, '1', ':')
	if hexDigest {
		var h [2 * sha1.Size]byte
		hex.Encode(h[:], sum[:])
		return append(b, h[:]...)
	}
	var e [28]byte
	base64.StdEncoding.Encode(e[:], sum[:])
	return append(b, e[:]...)
}

// CommunityID is AppendCommunityID's base64 form as a string.
func CommunityID(k *Key, seed uint16) string {
	var b [CommunityIDLen]byte
	return string(AppendCommunityID(b[:0], k, seed, false))
}

// icmpCounterpart is the spec's counterpart of an ICMP (or ICMPv6)
// message of type t: Zeek's pairs (ICMPCounterpart), and for ICMPv6 also
// node information (who are you) and home agent address discovery,
// which the spec pairs and Zeek does not; paired is false for a type
// without one, whose ID is then not reordered.
func icmpCounterpart(proto, t uint8) (peer uint8, paired bool) {
	v6 := proto == ProtoICMPv6
	if peer, paired = ICMPCounterpart(t, v6); paired || !v6 {
		return peer, paired
	}
	return pairOf(communityIDICMP6Pairs[:], t)
}

var communityIDICMP6Pairs = [...][2]uint8{{139, 140}, {144, 145}}
