package pipeline

import (
	"net"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/gen"
)

// BenchmarkBatchAdd measures batch.add, the copy of each packet into its
// shard's batch: the packets of a generated trace, and VXLAN-tunnelled
// ones, whose carriers the batch copies too; "inline" as one worker's
// batches, "claimed" as a worker shard's (batch.claim). The packets are
// a few dozen, as the reader's one Packet is in its cache.
func BenchmarkBatchAdd(b *testing.B) {
	plain := decodedTrace(b, gen.Options{Flows: 200, Seed: 3, Snaplen: 96, Duration: time.Second})[:64]
	for _, c := range []struct {
		name string
		pkts []capture.Packet
	}{{"plain", plain}, {"vxlan", vxlanPackets(b, 64)}} {
		for _, handoff := range []bool{false, true} {
			name := c.name + "/inline"
			if handoff {
				name = c.name + "/claimed"
			}
			b.Run(name, func(b *testing.B) {
				bt := &batch{handoff: handoff}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if bt.add(&c.pkts[i], 1, uint64(i)) {
						bt.empty()
					}
					if i++; i == len(c.pkts) {
						i = 0
					}
				}
			})
		}
	}
}

// vxlanPackets decodes n VXLAN frames, each a TCP segment of its own
// flow between two tunnel endpoints, into packets of their own.
func vxlanPackets(b *testing.B, n int) []capture.Packet {
	b.Helper()
	mac := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	pkts := make([]capture.Packet, n)
	for i := range pkts {
		outer := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP,
			SrcIP: net.IPv4(192, 0, 2, 1), DstIP: net.IPv4(192, 0, 2, 2)}
		udp := &layers.UDP{SrcPort: layers.UDPPort(40000 + i), DstPort: capture.PortVXLAN}
		udp.SetNetworkLayerForChecksum(outer)
		inner := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP,
			SrcIP: net.IPv4(10, 0, 0, 1), DstIP: net.IPv4(10, 0, 0, 2)}
		tcp := &layers.TCP{SrcPort: layers.TCPPort(1024 + i), DstPort: 80, ACK: true, Window: 512}
		tcp.SetNetworkLayerForChecksum(inner)
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, opts,
			&layers.Ethernet{SrcMAC: mac, DstMAC: mac, EthernetType: layers.EthernetTypeIPv4}, outer, udp,
			&layers.VXLAN{ValidIDFlag: true, VNI: 123},
			&layers.Ethernet{SrcMAC: mac, DstMAC: mac, EthernetType: layers.EthernetTypeIPv4}, inner, tcp,
			gopacket.Payload(make([]byte, 64))); err != nil {
			b.Fatal(err)
		}
		d := buf.Bytes()
		if r := capture.Decode(&pkts[i], capture.LinkEthernet, d, len(d), time.Unix(0, 0)); r != capture.ReasonNone || pkts[i].Tunnels != 1 {
			b.Fatalf("vxlan frame: %v, %d tunnels", r, pkts[i].Tunnels)
		}
	}
	return pkts
}
