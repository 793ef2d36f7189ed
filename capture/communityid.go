package capture

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
)

// CommunityID returns the Community ID v1 of the flow k with seed 0
// ("1:" and the base64 of a SHA-1 over seed, addresses, protocol and
// ports, the endpoints ordered smaller first), the flow hash Zeek,
// Suricata and others print, so that flowmon's alerts join their logs.
// ICMP ports are type and reply type (or code), as the spec maps them.
// It allocates: call it per alert, not per packet.
func CommunityID(k *Key) string {
	src, dst, sp, dp := k.Src.Unmap(), k.Dst.Unmap(), k.SrcPort, k.DstPort
	if c := src.Compare(dst); c > 0 || (c == 0 && sp > dp) {
		src, dst, sp, dp = dst, src, dp, sp
	}
	b := make([]byte, 0, 2+32+1+1+4)
	b = append(b, 0, 0) // seed
	b = append(b, src.AsSlice()...)
	b = append(b, dst.AsSlice()...)
	b = append(b, k.Proto, 0)
	switch k.Proto {
	case ProtoTCP, ProtoUDP, ProtoSCTP, ProtoICMP, ProtoICMPv6:
		b = binary.BigEndian.AppendUint16(b, sp)
		b = binary.BigEndian.AppendUint16(b, dp)
	}
	sum := sha1.Sum(b)
	return "1:" + base64.StdEncoding.EncodeToString(sum[:])
}
