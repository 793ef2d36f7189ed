package capture

import (
	"net/netip"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/flowmon/flowmon/internal/testutil/cputime"
)

var ts0 = time.Unix(1700000000, 123456789).UTC()

func TestDecodeLinkTypes(t *testing.T) {
	tcpSeg := tcp(40000, 80, true, false)
	v4 := ip4("192.0.2.10", "198.51.100.1", layers.IPProtocolTCP)
	v4frame := frame(t, v4, tcpSeg)
	want := Key{Src: netip.MustParseAddr("192.0.2.10"), Dst: netip.MustParseAddr("198.51.100.1"),
		SrcPort: 40000, DstPort: 80, Proto: ProtoTCP}
	sll := make([]byte, 16)
	sll[14], sll[15] = 0x08, 0x00
	sll2 := make([]byte, 20)
	sll2[0], sll2[1] = 0x08, 0x00
	null := []byte{2, 0, 0, 0}
	loop := []byte{0, 0, 0, 2}
	cases := []struct {
		name  string
		link  uint16
		data  []byte
		vlans uint8
	}{
		{"ethernet", LinkEthernet, frame(t, eth(layers.EthernetTypeIPv4), v4, tcpSeg), 0},
		{"dot1q", LinkEthernet, frame(t, eth(layers.EthernetTypeDot1Q),
			&layers.Dot1Q{VLANIdentifier: 7, Type: layers.EthernetTypeIPv4}, v4, tcpSeg), 1},
		{"qinq", LinkEthernet, frame(t, eth(layers.EthernetTypeQinQ),
			&layers.Dot1Q{VLANIdentifier: 7, Type: layers.EthernetTypeDot1Q},
			&layers.Dot1Q{VLANIdentifier: 8, Type: layers.EthernetTypeIPv4}, v4, tcpSeg), 2},
		{"mpls", LinkEthernet, frame(t, eth(layers.EthernetTypeMPLSUnicast),
			&layers.MPLS{Label: 16, StackBottom: false, TTL: 5}, &layers.MPLS{Label: 17, StackBottom: true, TTL: 5}, v4, tcpSeg), 0},
		{"raw", LinkRaw, v4frame, 0},
		{"ipv4", LinkIPv4, v4frame, 0},
		{"sll", LinkSLL, append(sll, v4frame...), 0},
		{"sll2", LinkSLL2, append(sll2, v4frame...), 0},
		{"null", LinkNull, append(null, v4frame...), 0},
		{"loop", LinkLoop, append(loop, v4frame...), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p Packet
			if r := Decode(&p, c.link, c.data, len(c.data), ts0); r != ReasonNone {
				t.Fatalf("reason %v", r)
			}
			if p.Directed() != want {
				t.Errorf("key %v, want %v", p.Directed(), want)
			}
			if !p.HasTCP || p.Flags != SYN || p.Seq != 1000 || p.TTL != 64 || p.IPID != 0x1234 || p.VLANs != c.vlans {
				t.Errorf("fields: %+v", p)
			}
			if p.Hash != want.Hash() || !p.Timestamp.Equal(ts0) {
				t.Errorf("hash/timestamp wrong")
			}
		})
	}
}

func TestDecodeIPv6ExtensionsAndFragments(t *testing.T) {
	src, dst := "2001:db8::1", "2001:db8::2"
	// Hop-by-hop then destination options, each 8 bytes of PadN.
	ext := []byte{60, 0, 1, 4, 0, 0, 0, 0, 17, 0, 1, 4, 0, 0, 0, 0}
	u := frame(t, udp(5353, 53), gopacket.Payload("hello"))
	data := frame(t, ip6(src, dst, layers.IPProtocolIPv6HopByHop), gopacket.Payload(append(ext, u...)))
	var p Packet
	if r := Decode(&p, LinkIPv6, data, len(data), ts0); r != ReasonNone {
		t.Fatalf("reason %v", r)
	}
	k := p.Directed()
	if k.Proto != ProtoUDP || k.SrcPort != 5353 || k.DstPort != 53 || p.PayloadLen != 5 || string(p.Payload) != "hello" {
		t.Fatalf("got %v payload %d %q", k, p.PayloadLen, p.Payload)
	}

	// Fragment header by hand: next=TCP, offset 0 with M=1, then offset 8.
	fragHdr := func(off uint16, more bool) []byte {
		v := off << 3
		if more {
			v |= 1
		}
		return []byte{6, 0, byte(v >> 8), byte(v), 0xde, 0xad, 0xbe, 0xef}
	}
	first := frame(t, ip6(src, dst, layers.IPProtocolIPv6Fragment), gopacket.Payload(append(fragHdr(0, true), frame(t, tcp(1, 2, true, false))...)))
	if r := Decode(&p, LinkIPv6, first, len(first), ts0); r != ReasonNone || p.Fragment != FirstFragment || p.Directed().DstPort != 2 || p.IPID != 0xdeadbeef {
		t.Fatalf("first fragment: %v %+v", r, p)
	}
	later := frame(t, ip6(src, dst, layers.IPProtocolIPv6Fragment), gopacket.Payload(append(fragHdr(8, false), 1, 2, 3, 4)))
	if r := Decode(&p, LinkIPv6, later, len(later), ts0); r != ReasonNone || p.Fragment != LaterFragment || p.Key.SrcPort != 0 || p.Key.DstPort != 0 || p.Key.Proto != ProtoTCP {
		t.Fatalf("later fragment: %v %+v", r, p)
	}
	v4 := ip4("10.0.0.1", "10.0.0.2", layers.IPProtocolUDP)
	v4.FragOffset = 100
	d4 := frame(t, v4, gopacket.Payload("xxxxxxxx"))
	if r := Decode(&p, LinkRaw, d4, len(d4), ts0); r != ReasonNone || p.Fragment != LaterFragment || p.Key.Proto != ProtoUDP || p.Key.SrcPort != 0 {
		t.Fatalf("ipv4 later fragment: %v %+v", r, p)
	}
}

// TestDecodeTruncatedTCP checks the CAIDA case: a 40-byte IPv4/TCP snap
// keeps the flags, and a header cut before the flags is counted.
func TestDecodeTruncatedTCP(t *testing.T) {
	full := frame(t, ip4("10.1.1.1", "10.2.2.2", layers.IPProtocolTCP), tcp(1234, 80, true, true), gopacket.Payload(make([]byte, 100)))
	var p Packet
	for _, snap := range []int{34, 40, 64} {
		if r := Decode(&p, LinkRaw, full[:snap], len(full), ts0); r != ReasonNone || !p.Flags.Has(SYN|ACK) || p.PayloadLen != 100 || p.WireLen != uint32(len(full)) {
			t.Errorf("snap %d: %v flags %v payload %d", snap, r, p.Flags, p.PayloadLen)
		}
	}
	if r := Decode(&p, LinkRaw, full[:33], len(full), ts0); r != ReasonTransportTruncated {
		t.Errorf("cut before flags: %v", r)
	}
}

func TestDecodeMalformed(t *testing.T) {
	good := frame(t, eth(layers.EthernetTypeIPv4), ip4("10.0.0.1", "10.0.0.2", layers.IPProtocolTCP), tcp(1, 2, true, false))
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := []struct {
		name string
		link uint16
		data []byte
		want Reason
	}{
		{"short ethernet", LinkEthernet, good[:10], ReasonLinkTruncated},
		{"arp", LinkEthernet, frame(t, eth(layers.EthernetTypeARP), gopacket.Payload(make([]byte, 28))), ReasonNotIP},
		{"short ip", LinkEthernet, good[:30], ReasonIPTruncated},
		{"bad version", LinkEthernet, mut(func(b []byte) []byte { b[14] = 0x55; return b }), ReasonIPVersion},
		{"ihl 4", LinkEthernet, mut(func(b []byte) []byte { b[14] = 0x44; return b }), ReasonIPHeaderLength},
		{"total < header", LinkEthernet, mut(func(b []byte) []byte { b[16], b[17] = 0, 10; return b }), ReasonIPTotalLength},
		{"tcp offset 3", LinkEthernet, mut(func(b []byte) []byte { b[14+20+12] = 0x30; return b }), ReasonTCPDataOffset},
		{"unsupported link", 127, good, ReasonLinkUnsupported},
		{"raw bad nibble", LinkRaw, []byte{0x75, 0, 0}, ReasonIPVersion},
		{"empty raw", LinkRaw, nil, ReasonIPTruncated},
		{"vlan loop", LinkEthernet, append(append([]byte(nil), good[:12]...), 0x81, 0, 0, 1, 0x81, 0, 0, 1, 0x81, 0, 0, 1, 0x81, 0, 0, 1, 0x81, 0, 0, 1, 0x81, 0, 0, 1, 0x81, 0, 0, 1, 0x81, 0, 0, 1, 0x81, 0, 0, 1, 0x81, 0), ReasonLinkTruncated},
	}
	for _, c := range cases {
		var p Packet
		if r := Decode(&p, c.link, c.data, len(c.data), ts0); r != c.want {
			t.Errorf("%s: reason %v, want %v", c.name, r, c.want)
		}
	}
}

func TestICMPEchoIsOneFlow(t *testing.T) {
	req := frame(t, ip4("10.0.0.1", "10.0.0.2", layers.IPProtocolICMPv4), &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(8, 0), Id: 1, Seq: 1})
	rep := frame(t, ip4("10.0.0.2", "10.0.0.1", layers.IPProtocolICMPv4), &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(0, 0), Id: 1, Seq: 1})
	var a, b Packet
	Decode(&a, LinkRaw, req, len(req), ts0)
	Decode(&b, LinkRaw, rep, len(rep), ts0)
	if a.Key != b.Key || a.Reversed == b.Reversed || a.Directed().SrcPort != 8 || a.Directed().DstPort != 0 {
		t.Fatalf("request %v / reply %v", a.Directed(), b.Directed())
	}
}

func TestDecodeNoAllocs(t *testing.T) {
	data := ethTCP(t)
	var p Packet
	if n := testing.AllocsPerRun(1000, func() { Decode(&p, LinkEthernet, data, len(data), ts0) }); n != 0 {
		t.Fatalf("Decode allocates %v times per packet", n)
	}
}

func BenchmarkDecode(b *testing.B) {
	data := ethTCP(b)
	var p Packet
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	m := cputime.Start()
	for b.Loop() {
		Decode(&p, LinkEthernet, data, len(data), ts0)
	}
	m.Report(b)
}

// BenchmarkDecodeUDP is the common UDP path: a datagram on no tunnel port,
// which pays the tunnel test (docs/results/tunnels.md).
func BenchmarkDecodeUDP(b *testing.B) {
	data := frame(b, eth(layers.EthernetTypeIPv4), ip4("192.0.2.1", "192.0.2.2", layers.IPProtocolUDP), udp(40000, 53), gopacket.Payload(make([]byte, 40)))
	var p Packet
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		Decode(&p, LinkEthernet, data, len(data), ts0)
	}
}

// BenchmarkGopacketDLP is the reference: gopacket's fastest decoding path
// on the same packet, including the flow hash gopacket offers.
func BenchmarkGopacketDLP(b *testing.B) {
	data := ethTCP(b)
	var (
		eth     layers.Ethernet
		ip4     layers.IPv4
		ip6     layers.IPv6
		tcp     layers.TCP
		udp     layers.UDP
		payload gopacket.Payload
	)
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &ip4, &ip6, &tcp, &udp, &payload)
	decoded := make([]gopacket.LayerType, 0, 8)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		parser.DecodeLayers(data, &decoded)
		_ = ip4.NetworkFlow().FastHash() ^ tcp.TransportFlow().FastHash()
	}
}
