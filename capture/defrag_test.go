package capture

import (
	"bytes"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// TestFragmentIP: a fragment's IP packet and the offset of its data are
// found in the frame it was decoded from, through VLAN tags and IPv6
// extension headers; a packet that is no fragment has none.
func TestFragmentIP(t *testing.T) {
	data := bytes.Repeat([]byte{0xAB}, 48)
	v4 := ip4("10.0.0.1", "10.0.0.2", layers.IPProtocolUDP)
	v4.Flags, v4.FragOffset = layers.IPv4MoreFragments, 0
	later := ip4("10.0.0.1", "10.0.0.2", layers.IPProtocolUDP)
	later.FragOffset = 3
	v6 := ip6("2001:db8::1", "2001:db8::2", layers.IPProtocolIPv6HopByHop)
	hbh := &layers.IPv6HopByHop{}
	hbh.NextHeader = layers.IPProtocolIPv6Fragment
	hbh.Options = []*layers.IPv6HopByHopOption{{OptionType: 1, OptionLength: 4, OptionData: []byte{0, 0, 0, 0}}}
	fh := &layers.IPv6Fragment{NextHeader: layers.IPProtocolUDP, FragmentOffset: 2, Identification: 9}
	for _, tc := range []struct {
		name      string
		frame     []byte
		kind      FragKind
		ipAt, off int
	}{
		{"ipv4 first", frame(t, eth(layers.EthernetTypeIPv4), v4, gopacket.Payload(data)), FirstFragment, 14, 20},
		{"ipv4 later, vlan", frame(t, eth(layers.EthernetTypeDot1Q), &layers.Dot1Q{VLANIdentifier: 5, Type: layers.EthernetTypeIPv4}, later, gopacket.Payload(data)), LaterFragment, 18, 20},
		{"ipv6 later after hop-by-hop", frame(t, eth(layers.EthernetTypeIPv6), v6, hbh, fh, gopacket.Payload(data)), LaterFragment, 14, 40 + 8 + 8},
		{"not a fragment", ethTCP(t), NotFragment, 0, 0},
	} {
		var p Packet
		if r := Decode(&p, LinkEthernet, tc.frame, len(tc.frame), ts0); r != ReasonNone || p.Fragment != tc.kind {
			t.Errorf("%s: %v, %v", tc.name, r, p.Fragment)
			continue
		}
		ip, off := p.FragmentIP(tc.frame)
		if tc.kind == NotFragment {
			if ip != nil {
				t.Errorf("%s: an IP packet for no fragment", tc.name)
			}
			continue
		}
		if len(ip) != len(tc.frame)-tc.ipAt || &ip[0] != &tc.frame[tc.ipAt] || off != tc.off || !bytes.Equal(ip[off:], data) {
			t.Errorf("%s: IP packet at %d (len %d), data at %d; want %d, %d", tc.name, len(tc.frame)-len(ip), len(ip), off, tc.ipAt, tc.off)
		}
	}
}
