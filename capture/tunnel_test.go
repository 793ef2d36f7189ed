package capture

import (
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

func cat(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

// tunnelFrames builds the crafted frames of the tunnel tests: an inner
// TCP SYN 10.9.0.1:1111 -> 10.9.0.2:80 (or its IPv6 twin) in each
// encapsulation, carried between 192.0.2.1 and 192.0.2.2.
type tunnelFrames struct {
	t        testing.TB
	in4, in6 []byte // inner IP packets
	inEth    []byte // inner Ethernet frame with in4
}

func newTunnelFrames(t testing.TB) *tunnelFrames {
	f := &tunnelFrames{t: t}
	f.in4 = frame(t, ip4("10.9.0.1", "10.9.0.2", layers.IPProtocolTCP), tcp(1111, 80, true, false))
	f.in6 = frame(t, ip6("2001:db8::1", "2001:db8::2", layers.IPProtocolTCP), tcp(1111, 80, true, false))
	f.inEth = frame(t, eth(layers.EthernetTypeIPv4), ip4("10.9.0.1", "10.9.0.2", layers.IPProtocolTCP), tcp(1111, 80, true, false))
	return f
}

// overIP is payload in an IPv4 packet of protocol proto, in Ethernet.
func (f *tunnelFrames) overIP(proto layers.IPProtocol, payload []byte) []byte {
	return frame(f.t, eth(layers.EthernetTypeIPv4), ip4("192.0.2.1", "192.0.2.2", proto), gopacket.Payload(payload))
}

// overIP6 is payload in an IPv6 packet with next header next, in Ethernet.
func (f *tunnelFrames) overIP6(next layers.IPProtocol, payload []byte) []byte {
	return frame(f.t, eth(layers.EthernetTypeIPv6), ip6("2001:db8:ff::1", "2001:db8:ff::2", next), gopacket.Payload(payload))
}

// overUDP is payload in a UDP datagram between the carrier's addresses.
func (f *tunnelFrames) overUDP(sport, dport uint16, payload []byte) []byte {
	return frame(f.t, eth(layers.EthernetTypeIPv4), ip4("192.0.2.1", "192.0.2.2", layers.IPProtocolUDP), udp(sport, dport), gopacket.Payload(payload))
}

var (
	inner4 = Key{Src: netip.MustParseAddr("10.9.0.1"), Dst: netip.MustParseAddr("10.9.0.2"), SrcPort: 1111, DstPort: 80, Proto: ProtoTCP}
	inner6 = Key{Src: netip.MustParseAddr("2001:db8::1"), Dst: netip.MustParseAddr("2001:db8::2"), SrcPort: 1111, DstPort: 80, Proto: ProtoTCP}
	outerA = netip.MustParseAddr("192.0.2.1")
	outerB = netip.MustParseAddr("192.0.2.2")
)

// 802.11 data frame header (To DS), with QoS control when qos.
func wlanHeader(qos, amsdu bool) []byte {
	h := make([]byte, 24)
	h[0], h[1] = 0x08, 0x01
	if qos {
		h[0] = 0x88
		q := []byte{0, 0}
		if amsdu {
			q[0] = 0x80
		}
		h = append(h, q...)
	}
	return h
}

var snapIPv4 = []byte{0xAA, 0xAA, 0x03, 0, 0, 0, 0x08, 0x00}

func TestDecodeTunnels(t *testing.T) {
	f := newTunnelFrames(t)
	gre := func(flags, proto uint16, extra ...byte) []byte {
		return append([]byte{byte(flags >> 8), byte(flags), byte(proto >> 8), byte(proto)}, extra...)
	}
	four := []byte{1, 2, 3, 4}
	sub := cat(snapIPv4, f.in4)
	amsdu := cat(make([]byte, 12), []byte{0, byte(len(sub))}, sub, make([]byte, (4-len(sub)%4)%4),
		make([]byte, 12), []byte{0, byte(len(sub))}, sub)
	teredoOrigin := []byte{0, 0, 0xEC, 0x4B, 0xBE, 0x3B, 0x6B, 0x7D}
	ayiya := cat([]byte{0x41, 0x52, 0x11, 4}, four, make([]byte, 16+20)) // 16-byte identity, 20-byte signature, IPv4
	cases := []struct {
		name  string
		data  []byte
		kind  TunnelKind
		want  Key
		outer uint8 // the carrier's protocol
		sport uint16
	}{
		{"gre ipv4", f.overIP(layers.IPProtocolGRE, cat(gre(0, 0x0800), f.in4)), TunnelGRE, inner4, ProtoGRE, 0},
		{"gre checksum key sequence", f.overIP(layers.IPProtocolGRE, cat(gre(0xB000, 0x86DD, cat(four, four, four)...), f.in6)), TunnelGRE, inner6, ProtoGRE, 0},
		{"gre ethernet bridging", f.overIP(layers.IPProtocolGRE, cat(gre(0x2000, 0x6558, four...), f.inEth)), TunnelGRE, inner4, ProtoGRE, 0},
		{"gre mpls", f.overIP(layers.IPProtocolGRE, cat(gre(0, 0x8847), []byte{0, 1, 0x01, 64}, f.in4)), TunnelGRE, inner4, ProtoGRE, 0},
		{"erspan type I", f.overIP(layers.IPProtocolGRE, cat(gre(0, 0x88BE), f.inEth)), TunnelGRE, inner4, ProtoGRE, 0},
		{"erspan type II", f.overIP(layers.IPProtocolGRE, cat(gre(0x1000, 0x88BE, four...), make([]byte, 8), f.inEth)), TunnelGRE, inner4, ProtoGRE, 0},
		{"erspan type III", f.overIP(layers.IPProtocolGRE, cat(gre(0x1000, 0x22EB, four...), make([]byte, 12), f.inEth)), TunnelGRE, inner4, ProtoGRE, 0},
		{"erspan type III subheader", f.overIP(layers.IPProtocolGRE, cat(gre(0x1000, 0x22EB, four...), make([]byte, 11), []byte{1}, make([]byte, 8), f.inEth)), TunnelGRE, inner4, ProtoGRE, 0},
		{"aruba 802.11", f.overIP(layers.IPProtocolGRE, cat(gre(0, 0x8210), wlanHeader(false, false), snapIPv4, f.in4)), TunnelGRE, inner4, ProtoGRE, 0},
		{"aruba a-msdu", f.overIP(layers.IPProtocolGRE, cat(gre(0, 0x8200), wlanHeader(true, true), amsdu)), TunnelGRE, inner4, ProtoGRE, 0},
		{"pptp", f.overIP(layers.IPProtocolGRE, cat(gre(0x3081, 0x880B, cat(four, four, four)...), []byte{0xFF, 0x03, 0x00, 0x21}, f.in4)), TunnelGRE, inner4, ProtoGRE, 0},
		{"gre in ipv6", f.overIP6(layers.IPProtocolGRE, cat(gre(0, 0x0800), f.in4)), TunnelGRE, inner4, ProtoGRE, 0},
		{"ipip", f.overIP(layers.IPProtocolIPv4, f.in4), TunnelIP, inner4, protoIPIP, 0},
		{"6in4", f.overIP(layers.IPProtocolIPv6, f.in6), TunnelIP, inner6, protoIPv6, 0},
		{"4in6", f.overIP6(layers.IPProtocolIPv4, f.in4), TunnelIP, inner4, protoIPIP, 0},
		{"6in6", f.overIP6(layers.IPProtocolIPv6, f.in6), TunnelIP, inner6, protoIPv6, 0},
		{"gre in udp", f.overUDP(40000, PortGREOverUDP, cat(gre(0, 0x0800), f.in4)), TunnelGRE, inner4, ProtoUDP, 40000},
		{"vxlan", f.overUDP(40000, PortVXLAN, cat([]byte{8, 0, 0, 0, 0, 0, 0x7b, 0}, f.inEth)), TunnelVXLAN, inner4, ProtoUDP, 40000},
		{"vxlan from its port", f.overUDP(PortVXLAN, 40000, cat([]byte{8, 0, 0, 0, 0, 0, 0x7b, 0}, f.inEth)), TunnelVXLAN, inner4, ProtoUDP, PortVXLAN},
		{"geneve ethernet with options", f.overUDP(40000, PortGeneve, cat([]byte{2, 0, 0x65, 0x58, 0, 0, 1, 0}, make([]byte, 8), f.inEth)), TunnelGeneve, inner4, ProtoUDP, 40000},
		{"geneve ipv4", f.overUDP(40000, PortGeneve, cat([]byte{0, 0, 0x08, 0x00, 0, 0, 1, 0}, f.in4)), TunnelGeneve, inner4, ProtoUDP, 40000},
		{"geneve ipv6", f.overUDP(40000, PortGeneve, cat([]byte{0, 0, 0x86, 0xDD, 0, 0, 1, 0}, f.in6)), TunnelGeneve, inner6, ProtoUDP, 40000},
		{"gtp g-pdu", f.overUDP(PortGTPU, PortGTPU, cat([]byte{0x30, 0xFF, 0, byte(len(f.in4)), 1, 2, 3, 4}, f.in4)), TunnelGTP, inner4, ProtoUDP, PortGTPU},
		{"gtp sequence and extension", f.overUDP(PortGTPU, PortGTPU, cat([]byte{0x36, 0xFF, 0, byte(len(f.in6) + 8), 1, 2, 3, 4, 0, 1, 0, 0x85}, []byte{1, 0x10, 0, 0}, f.in6)), TunnelGTP, inner6, ProtoUDP, PortGTPU},
		{"teredo", f.overUDP(40000, PortTeredo, f.in6), TunnelTeredo, inner6, ProtoUDP, 40000},
		{"teredo origin indication", f.overUDP(PortTeredo, 40000, cat(teredoOrigin, f.in6)), TunnelTeredo, inner6, ProtoUDP, PortTeredo},
		{"teredo authentication", f.overUDP(40000, PortTeredo, cat([]byte{0, 1, 2, 1, 'i', 'd', 'a'}, make([]byte, 9), teredoOrigin, f.in6)), TunnelTeredo, inner6, ProtoUDP, 40000},
		{"ayiya", f.overUDP(40000, PortAYIYA, cat(ayiya, f.in4)), TunnelAYIYA, inner4, ProtoUDP, 40000},
		{"ayiya detected", f.overUDP(40000, 40001, cat(ayiya, f.in4)), TunnelAYIYA, inner4, ProtoUDP, 40000},
		{"gre in gre", f.overIP(layers.IPProtocolGRE, cat(gre(0, 0x0800), frame(t, ip4("198.51.100.1", "198.51.100.2", layers.IPProtocolGRE), gopacket.Payload(cat(gre(0, 0x0800), f.in4))))), TunnelGRE, inner4, ProtoGRE, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p Packet
			if r := Decode(&p, LinkEthernet, c.data, len(c.data), ts0); r != ReasonNone {
				t.Fatalf("reason %v", r)
			}
			if p.Directed() != c.want || p.Hash != c.want.Hash() || !p.HasTCP || p.Flags != SYN {
				t.Fatalf("inner %v flags %v, want %v", p.Directed(), p.Flags, c.want)
			}
			if p.Tunnels == 0 || p.Tunnel != c.kind {
				t.Fatalf("tunnels %d kind %v, want %v", p.Tunnels, p.Tunnel, c.kind)
			}
			car := &p.Carriers.Outer
			outer := car.Directed()
			if outer.Proto != c.outer || outer.SrcPort != c.sport || car.Hash != car.Key.Hash() {
				t.Fatalf("outer %v (hash %x), want protocol %d from port %d", outer, car.Hash, c.outer, c.sport)
			}
			if c.name == "gre in gre" {
				most := p.Carriers.Outermost.Key
				if p.Tunnels != 2 || most.Src != outerA || most.Dst != outerB || outer.Src != netip.MustParseAddr("198.51.100.1") {
					t.Fatalf("nested: %d tunnels, outermost %v, outer %v", p.Tunnels, most, outer)
				}
			} else if p.Tunnels == 1 && outer.Src.Is4() && (outer.Src != outerA || outer.Dst != outerB) {
				t.Fatalf("outer %v", outer)
			}
		})
	}
}

// TestDecodeTunnelFallsBack checks the UDP datagrams on tunnel ports that
// carry no packet: they are the UDP flow they are, as Zeek logs them.
func TestDecodeTunnelFallsBack(t *testing.T) {
	f := newTunnelFrames(t)
	bubble := frame(t, ip6("2001:0:4137:9e50::1", "2001:db8::2", layers.IPProtocolNoNextHeader))
	arp := frame(t, eth(layers.EthernetTypeARP), gopacket.Payload(make([]byte, 28)))
	cases := []struct {
		name         string
		data         []byte
		sport, dport uint16
	}{
		{"gtp echo request", f.overUDP(PortGTPC, PortGTPC, []byte{0x32, 0x01, 0, 4, 0, 0, 0, 0, 0, 1, 0, 0}), PortGTPC, PortGTPC},
		{"gtp version 2", f.overUDP(PortGTPU, 53, cat([]byte{0x48, 0xFF, 0, byte(len(f.in4)), 1, 2, 3, 4}, f.in4)), PortGTPU, 53},
		{"teredo bubble", f.overUDP(40000, PortTeredo, bubble), 40000, PortTeredo},
		{"teredo length mismatch", f.overUDP(40000, PortTeredo, cat(f.in6, []byte{1, 2, 3})), 40000, PortTeredo},
		{"vxlan arp", f.overUDP(40000, PortVXLAN, cat([]byte{8, 0, 0, 0, 0, 0, 0x7b, 0}, arp)), 40000, PortVXLAN},
		{"geneve unknown protocol", f.overUDP(40000, PortGeneve, cat([]byte{0, 0, 0x12, 0x34, 0, 0, 1, 0}, f.in4)), 40000, PortGeneve},
		{"ayiya not a forward", f.overUDP(40000, PortAYIYA, cat([]byte{0x41, 0x52, 0x12, 4}, make([]byte, 4+36), f.in4)), 40000, PortAYIYA},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p Packet
			if r := Decode(&p, LinkEthernet, c.data, len(c.data), ts0); r != ReasonNone {
				t.Fatalf("reason %v", r)
			}
			want := Key{Src: outerA, Dst: outerB, SrcPort: c.sport, DstPort: c.dport, Proto: ProtoUDP}
			if p.Tunnels != 0 || p.Directed() != want || p.HasTCP || p.TTL != 64 || p.EtherType != EtherTypeIPv4 {
				t.Fatalf("%d tunnels, key %v ttl %d, want the datagram's %v", p.Tunnels, p.Directed(), p.TTL, want)
			}
		})
	}
	// A VXLAN inside Geneve carrying ARP is the VXLAN datagram's flow,
	// inside its Geneve tunnel.
	vx := frame(t, ip4("198.51.100.1", "198.51.100.2", layers.IPProtocolUDP), udp(40001, PortVXLAN), gopacket.Payload(cat([]byte{8, 0, 0, 0, 0, 0, 0x7b, 0}, arp)))
	data := f.overUDP(40000, PortGeneve, cat([]byte{0, 0, 0x08, 0x00, 0, 0, 1, 0}, vx))
	var p Packet
	if r := Decode(&p, LinkEthernet, data, len(data), ts0); r != ReasonNone || p.Tunnels != 1 || p.Tunnel != TunnelGeneve || p.Directed().DstPort != PortVXLAN {
		t.Fatalf("vxlan arp in geneve: %v, %d tunnels (%v), key %v", r, p.Tunnels, p.Tunnel, p.Directed())
	}
}

func TestDecodeLinkHeaders(t *testing.T) {
	f := newTunnelFrames(t)
	head := frame(t, eth(0))[:12]
	cases := []struct {
		name string
		data []byte
	}{
		{"pbb", cat(head, []byte{0x88, 0xE7, 0, 0, 0, 1}, macB, macA, []byte{0x08, 0x00}, f.in4)},
		{"pbb with inner vlan", cat(head, []byte{0x81, 0, 0, 5, 0x88, 0xE7, 0, 0, 0, 1}, macB, macA, []byte{0x81, 0, 0, 7, 0x08, 0x00}, f.in4)},
		{"vn-tag", cat(head, []byte{0x89, 0x26, 0, 1, 0, 2, 0x08, 0x00}, f.in4)},
		{"fabricpath", cat(head, []byte{0x89, 0x03, 0, 0x3f}, macB, macA, []byte{0x08, 0x00}, f.in4)},
	}
	for _, c := range cases {
		var p Packet
		if r := Decode(&p, LinkEthernet, c.data, len(c.data), ts0); r != ReasonNone || p.Directed() != inner4 || p.Tunnels != 0 {
			t.Errorf("%s: %v, key %v, %d tunnels", c.name, r, p.Directed(), p.Tunnels)
		}
		if r := Decode(&p, LinkEthernet, c.data[:16], len(c.data), ts0); r != ReasonLinkTruncated {
			t.Errorf("%s cut: %v", c.name, r)
		}
	}
}

func TestDecodeTunnelMalformed(t *testing.T) {
	f := newTunnelFrames(t)
	nest := f.in4
	for range DefaultMaxTunnelDepth {
		nest = frame(t, ip4("198.51.100.1", "198.51.100.2", layers.IPProtocolIPv4), gopacket.Payload(nest))
	}
	cases := []struct {
		name string
		data []byte
		want Reason
	}{
		{"gre cut", f.overIP(layers.IPProtocolGRE, []byte{0, 0}), ReasonTunnelTruncated},
		{"gre options cut", f.overIP(layers.IPProtocolGRE, []byte{0xB0, 0, 8, 0, 1, 2}), ReasonTunnelTruncated},
		{"gre version 2", f.overIP(layers.IPProtocolGRE, cat([]byte{0, 2, 8, 0}, f.in4)), ReasonGREHeader},
		{"gre routing", f.overIP(layers.IPProtocolGRE, cat([]byte{0x40, 0, 8, 0, 0, 0, 0, 0}, f.in4)), ReasonGREHeader},
		{"gre reserved flags", f.overIP(layers.IPProtocolGRE, cat([]byte{0, 0x08, 8, 0}, f.in4)), ReasonGREHeader},
		{"enhanced gre not ppp", f.overIP(layers.IPProtocolGRE, cat([]byte{0x20, 0x01, 8, 0, 0, 0, 0, 0}, f.in4)), ReasonGREHeader},
		{"pptp cut", f.overIP(layers.IPProtocolGRE, []byte{0x20, 0x01, 0x88, 0x0B, 0, 0, 0, 0, 0xFF}), ReasonTunnelTruncated},
		{"pptp lcp", f.overIP(layers.IPProtocolGRE, []byte{0x20, 0x01, 0x88, 0x0B, 0, 0, 0, 0, 0xFF, 0x03, 0xC0, 0x21, 1}), ReasonNotIP},
		{"erspan cut", f.overIP(layers.IPProtocolGRE, cat([]byte{0x10, 0, 0x88, 0xBE, 0, 0, 0, 1}, make([]byte, 12))), ReasonTunnelTruncated},
		{"erspan III cut", f.overIP(layers.IPProtocolGRE, cat([]byte{0, 0, 0x22, 0xEB}, make([]byte, 20))), ReasonTunnelTruncated},
		{"802.11 cut", f.overIP(layers.IPProtocolGRE, cat([]byte{0, 0, 0x82, 0}, make([]byte, 20))), ReasonTunnelTruncated},
		{"802.11 management", f.overIP(layers.IPProtocolGRE, cat([]byte{0, 0, 0x82, 0}, make([]byte, 40))), ReasonNotIP},
		{"inner ip cut", f.overIP(layers.IPProtocolGRE, cat([]byte{0, 0, 8, 0}, f.in4[:12])), ReasonIPTruncated},
		{"vxlan cut", f.overUDP(40000, PortVXLAN, []byte{8, 0, 0, 0}), ReasonTunnelTruncated},
		{"geneve options past the end", f.overUDP(40000, PortGeneve, []byte{0x3F, 0, 0x65, 0x58, 0, 0, 1, 0, 1, 2, 3, 4}), ReasonTunnelTruncated},
		{"gtp cut", f.overUDP(40000, PortGTPU, []byte{0x30, 0xFF, 0}), ReasonTunnelTruncated},
		{"gtp extension past the end", f.overUDP(40000, PortGTPU, []byte{0x34, 0xFF, 0, 12, 1, 2, 3, 4, 0, 0, 0, 0x85, 4, 0, 0}), ReasonTunnelTruncated},
		{"gtp extension of length 0", f.overUDP(40000, PortGTPU, cat([]byte{0x34, 0xFF, 0, 12, 1, 2, 3, 4, 0, 0, 0, 0x85, 0, 0, 0, 0}, f.in4)), ReasonTunnelTruncated},
		{"teredo cut", f.overUDP(40000, PortTeredo, []byte{0, 0, 1, 2}), ReasonTunnelTruncated},
		{"ayiya cut", f.overUDP(40000, PortAYIYA, []byte{0x41, 0x52, 0x11, 4, 0, 0, 0, 0, 1, 2}), ReasonTunnelTruncated},
		{"too deep", f.overIP(layers.IPProtocolIPv4, nest), ReasonTunnelDepth},
	}
	for _, c := range cases {
		var p Packet
		r := Decode(&p, LinkEthernet, c.data, len(c.data), ts0)
		if r != c.want {
			t.Errorf("%s: reason %v, want %v", c.name, r, c.want)
			continue
		}
		if p.Tunnels == 0 {
			t.Errorf("%s: no tunnel: the carrier is not known", c.name)
		} else if car := &p.Carriers.Outer; !car.Key.IsValid() || car.Hash != car.Key.Hash() {
			t.Errorf("%s: %d tunnels, outer %v: the carrier is not known", c.name, p.Tunnels, car.Key)
		}
	}
}

func TestDecodeOptionsPorts(t *testing.T) {
	f := newTunnelFrames(t)
	vx := cat([]byte{8, 0, 0, 0, 0, 0, 0x7b, 0}, f.inEth)
	var p Packet
	var none DecodeOptions
	data := f.overUDP(40000, PortVXLAN, vx)
	if r := none.Decode(&p, LinkEthernet, data, len(data), ts0); r != ReasonNone || p.Tunnels != 0 || p.Key.Proto != ProtoUDP {
		t.Fatalf("vxlan with no ports: %v, %d tunnels, %v", r, p.Tunnels, p.Key)
	}
	o := DecodeOptions{VXLANPorts: []uint16{8472}}
	data = f.overUDP(40000, 8472, vx)
	if r := o.Decode(&p, LinkEthernet, data, len(data), ts0); r != ReasonNone || p.Tunnel != TunnelVXLAN || p.Directed() != inner4 {
		t.Fatalf("vxlan on 8472: %v, %v, %v", r, p.Tunnel, p.Directed())
	}
	data = f.overUDP(40000, 40001, f.in6)
	if r := none.Decode(&p, LinkEthernet, data, len(data), ts0); r != ReasonNone || p.Tunnels != 0 {
		t.Fatalf("teredo-like datagram without detection: %v, %d tunnels", r, p.Tunnels)
	}
	teredo6 := frame(t, ip6("2001:0:4137:9e50::1", "2001:db8::2", layers.IPProtocolTCP), tcp(1111, 80, true, false))
	data = f.overUDP(40000, 40001, teredo6)
	if r := Decode(&p, LinkEthernet, data, len(data), ts0); r != ReasonNone || p.Tunnel != TunnelTeredo || p.Directed().DstPort != 80 {
		t.Fatalf("teredo detected: %v, %v, %v", r, p.Tunnel, p.Directed())
	}
	for _, bad := range []DecodeOptions{
		{MaxTunnelDepth: MaxMaxTunnelDepth + 1},
		{VXLANPorts: []uint16{4789}, GenevePorts: []uint16{4789}},
		{GTPPorts: []uint16{0}},
	} {
		if bad.Validate() == nil {
			t.Errorf("%+v validates", bad)
		}
	}
	d := DefaultDecodeOptions()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestPortTableMatchesLists: the compiled port table names the tunnel
// the lists name (udpTunnelByPort) for every destination and every source
// port, with no lists, Zeek's, and ports in two lists, which Validate
// refuses but the decoder still reads as the lists do.
func TestPortTableMatchesLists(t *testing.T) {
	if tunnelGREOverUDP > 0x0F {
		t.Fatalf("tunnel kind %d does not fit portTable.kinds' four bits", tunnelGREOverUDP)
	}
	for _, o := range []DecodeOptions{
		{},
		DefaultDecodeOptions(),
		{VXLANPorts: []uint16{4789, 8472}, GenevePorts: []uint16{4789, 6081}, GREOverUDPPorts: []uint16{6081, 65535}},
		{GTPPorts: []uint16{1, PortGTPU, PortGTPC}, TeredoPorts: []uint16{PortTeredo, PortGTPU}, AYIYAPorts: []uint16{PortAYIYA}},
	} {
		c := o.Compiled()
		check := func(sport, dport uint16) {
			if got, want := c.udpTunnelByPort(sport, dport), o.udpTunnelByPort(sport, dport); got != want {
				t.Fatalf("%+v: ports %d -> %d: table %v, lists %v", o, sport, dport, got, want)
			}
		}
		for _, other := range append(o.UDPTunnelPorts(), 0, 53, 40000) {
			for port := range 1 << 16 {
				check(other, uint16(port))
				check(uint16(port), other)
			}
		}
	}
}

func TestDecodeTunnelsNoAllocs(t *testing.T) {
	for _, b := range tunnelBenchFrames(t) {
		var p Packet
		if n := testing.AllocsPerRun(200, func() { Decode(&p, LinkEthernet, b.data, len(b.data), ts0) }); n != 0 {
			t.Errorf("%s: Decode allocates %v times per packet", b.name, n)
		}
	}
}

type namedFrame struct {
	name string
	data []byte
}

// tunnelBenchFrames is one frame of each tunnel kind, and of the link
// headers passed on the way (PBB, NSH), for the benchmarks and the
// allocation test.
func tunnelBenchFrames(t testing.TB) []namedFrame {
	f := newTunnelFrames(t)
	pay := gopacket.Payload(make([]byte, 64))
	in4 := frame(t, ip4("10.9.0.1", "10.9.0.2", layers.IPProtocolTCP), tcp(1111, 80, false, true), pay)
	in6 := frame(t, ip6("2001:0:4137:9e50::1", "2001:db8::2", layers.IPProtocolTCP), tcp(1111, 80, false, true), pay)
	inEth := frame(t, eth(layers.EthernetTypeIPv4), ip4("10.9.0.1", "10.9.0.2", layers.IPProtocolTCP), tcp(1111, 80, false, true), pay)
	return []namedFrame{
		{"gre", f.overIP(layers.IPProtocolGRE, cat([]byte{0, 0, 8, 0}, in4))},
		{"erspan2", f.overIP(layers.IPProtocolGRE, cat([]byte{0x10, 0, 0x88, 0xBE, 0, 0, 0, 1}, make([]byte, 8), inEth))},
		{"pptp", f.overIP(layers.IPProtocolGRE, cat([]byte{0x30, 0x01, 0x88, 0x0B, 0, 0, 0, 0, 0, 0, 0, 1}, []byte{0xFF, 0x03, 0x00, 0x21}, in4))},
		{"ipip", f.overIP(layers.IPProtocolIPv4, in4)},
		{"6in4", f.overIP(layers.IPProtocolIPv6, in6)},
		{"gre-udp", f.overUDP(40000, PortGREOverUDP, cat([]byte{0, 0, 8, 0}, in4))},
		{"vxlan", f.overUDP(40000, PortVXLAN, cat([]byte{8, 0, 0, 0, 0, 0, 0x7b, 0}, inEth))},
		{"geneve", f.overUDP(40000, PortGeneve, cat([]byte{2, 0, 0x65, 0x58, 0, 0, 1, 0}, make([]byte, 8), inEth))},
		{"gtp", f.overUDP(PortGTPU, PortGTPU, cat([]byte{0x32, 0xFF, 0, byte(len(in4) + 4), 1, 2, 3, 4, 0, 1, 0, 0}, in4))},
		{"teredo", f.overUDP(40000, PortTeredo, in6)},
		{"ayiya", f.overUDP(40000, PortAYIYA, cat([]byte{0x41, 0x52, 0x11, 4, 0, 0, 0, 0}, make([]byte, 36), in4))},
		{"pbb", cat(frame(t, eth(0))[:12], []byte{0x88, 0xE7, 0, 0, 0, 1}, macB, macA, []byte{0x08, 0x00}, in4)},
		{"gre-in-gre", f.overIP(layers.IPProtocolGRE, cat([]byte{0, 0, 8, 0}, frame(t, ip4("198.51.100.1", "198.51.100.2", layers.IPProtocolGRE), gopacket.Payload(cat([]byte{0, 0, 8, 0}, in4)))))},
		{"udp-dns", f.overUDP(40000, 53, make([]byte, 40))},
		{"vxlan-gpe", f.overUDP(40000, PortVXLANGPE, cat(vxlanGPE(nshNextIPv4), in4))},
		{"vxlan-gpe-nsh", f.overUDP(40000, PortVXLANGPE, cat(vxlanGPE(nshNextNSH), nshMD1(nshNextIPv4), in4))},
		{"ah-ipip", f.overIP(protoAH, cat(ahHeader(protoIPIP), in4))},
		{"nsh", cat(frame(t, eth(0))[:12], []byte{0x89, 0x4F}, nshMD1(nshNextIPv4), in4)},
	}
}

// BenchmarkDecodeTunnel decodes one frame of each tunnel kind, and a
// plain UDP datagram (the cost the port checks add to UDP).
func BenchmarkDecodeTunnel(b *testing.B) {
	for _, fr := range tunnelBenchFrames(b) {
		b.Run(fr.name, func(b *testing.B) {
			var p Packet
			b.ReportAllocs()
			b.SetBytes(int64(len(fr.data)))
			for b.Loop() {
				Decode(&p, LinkEthernet, fr.data, len(fr.data), ts0)
			}
			if r := Decode(&p, LinkEthernet, fr.data, len(fr.data), ts0); r != ReasonNone || (fr.name != "udp-dns" && fr.name != "pbb" && fr.name != "nsh" && p.Tunnels == 0) {
				b.Fatalf("%v, %d tunnels", r, p.Tunnels)
			}
		})
	}
}
