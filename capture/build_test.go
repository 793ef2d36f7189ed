package capture

import (
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// frame serialises layers with lengths and checksums filled in.
func frame(t testing.TB, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	hasNet := false
	for _, l := range ls {
		_, ok := l.(gopacket.NetworkLayer)
		hasNet = hasNet || ok
	}
	for _, l := range ls {
		if tl, ok := l.(interface {
			SetNetworkLayerForChecksum(gopacket.NetworkLayer) error
		}); ok {
			for _, n := range ls {
				if nl, ok := n.(gopacket.NetworkLayer); ok {
					tl.SetNetworkLayerForChecksum(nl)
				}
			}
		}
	}
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: hasNet}, ls...); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

var (
	macA = net.HardwareAddr{0, 1, 2, 3, 4, 5}
	macB = net.HardwareAddr{0, 1, 2, 3, 4, 6}
)

func eth(et layers.EthernetType) *layers.Ethernet {
	return &layers.Ethernet{SrcMAC: macA, DstMAC: macB, EthernetType: et}
}

func ip4(src, dst string, proto layers.IPProtocol) *layers.IPv4 {
	return &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Id: 0x1234, Protocol: proto,
		SrcIP: net.ParseIP(src).To4(), DstIP: net.ParseIP(dst).To4()}
}

func ip6(src, dst string, next layers.IPProtocol) *layers.IPv6 {
	return &layers.IPv6{Version: 6, HopLimit: 63, NextHeader: next,
		SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
}

func tcp(sport, dport uint16, syn, ack bool) *layers.TCP {
	return &layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport),
		Seq: 1000, Ack: 2000, SYN: syn, ACK: ack, Window: 512}
}

func udp(sport, dport uint16) *layers.UDP {
	return &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
}

// ethTCP is the benchmark's packet: Ethernet, IPv4, TCP, 64 bytes of data.
func ethTCP(t testing.TB) []byte {
	return frame(t, eth(layers.EthernetTypeIPv4), ip4("10.0.0.2", "10.0.0.1", layers.IPProtocolTCP),
		tcp(40000, 443, false, true), gopacket.Payload(make([]byte, 64)))
}
