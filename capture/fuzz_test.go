package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// fuzzLinks are the link types the differential fuzzer compares; the
// fuzzer picks one by index so every input is meaningful.
var fuzzLinks = []struct {
	link  uint16
	first gopacket.LayerType
}{
	{LinkEthernet, layers.LayerTypeEthernet},
	{LinkRaw, 0}, // by version nibble
	{LinkSLL, layers.LayerTypeLinuxSLL},
	{LinkNull, layers.LayerTypeLoopback},
	{LinkNFLOG, 0}, // gopacket has no NFLOG: checked for panics, allocations and bounds only
}

func addSeeds(f *testing.F) {
	f.Add(uint8(0), ethTCP(f))
	f.Add(uint8(0), frame(f, eth(layers.EthernetTypeDot1Q), &layers.Dot1Q{VLANIdentifier: 5, Type: layers.EthernetTypeIPv6},
		ip6("2001:db8::1", "2001:db8::2", layers.IPProtocolUDP), udp(53, 5353), gopacket.Payload("x")))
	f.Add(uint8(1), frame(f, ip4("1.2.3.4", "5.6.7.8", layers.IPProtocolICMPv4), &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(8, 0)}))
	// Real frames from a few shared captures, when they are there.
	dir := filepath.Join("..", "..", "shared", "pcaps", "real") // seeds only when present
	names := []string{"zeek/wikipedia.pcap", "zeek/tcp/truncated-header.pcap", "tcpreplay/test.pcap", "zeek/mixed-vlan-mpls.pcap",
		"zeek/tunnels/Teredo.pcap", "zeek/tunnels/gre-sample.pcap", "zeek/tunnels/gre-pptp.pcap", "zeek/tunnels/gre-within-gre.pcap",
		"zeek/tunnels/vxlan.pcap", "zeek/tunnels/geneve.pcap", "zeek/tunnels/gtp/gtp1_gn_normal_incl_fragmentation.pcap",
		"zeek/pbb.pcap", "zeek/vntag.pcap", "zeek/vntag_vlan_sandwich_clean.pcap", "zeek/cisco-fabric-path.pcap",
		"tcpdump/nsh.pcap", "tcpdump/nsh-over-vxlan-gpe.pcap", "suricata-verify/decode-nsh-type2/input.pcap", "arkime/ah-esp.pcap",
		"tcpdump/nflog.pcap", "zeek/nflog-http.pcap"}
	names = append(names, zeekTunnelTraces...)
	for _, name := range names {
		r, err := Open(filepath.Join(dir, name))
		if err != nil || r.pcap == nil {
			continue
		}
		for range 12 {
			data, err := r.pcap.next()
			if err != nil {
				break
			}
			idx := uint8(0)
			switch r.link {
			case LinkRaw:
				idx = 1
			case LinkNFLOG:
				idx = 4
			}
			f.Add(idx, append([]byte(nil), data...))
		}
		r.Close()
	}
}

// FuzzDecode checks that Decode never panics nor allocates, that its work
// is bounded (tunnels no deeper than the bound, tags no more than the
// link walk's), and compares it with gopacket's layers: when gopacket
// decodes a complete IP and TCP/UDP header and flowmon passed no tunnel,
// flowmon must decode the same addresses, ports and TCP fields; when
// flowmon passed one tunnel, its carrier is gopacket's first IP header.
func FuzzDecode(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, li uint8, data []byte) {
		l := fuzzLinks[int(li)%len(fuzzLinks)]
		var p Packet
		reason := Decode(&p, l.link, data, len(data), ts0)
		if n := testing.AllocsPerRun(1, func() { Decode(&p, l.link, data, len(data), ts0) }); n != 0 {
			t.Fatalf("Decode allocates %v times", n)
		}
		if int(p.Tunnels) > DefaultMaxTunnelDepth+1 || int(p.VLANs) > (DefaultMaxTunnelDepth+1)*maxLinkHops {
			t.Fatalf("%d tunnels, %d tags: %v", p.Tunnels, p.VLANs, reason)
		}
		if c := p.Carriers; p.Tunnels > 0 && (!c.Outer.Key.IsValid() || c.Outer.Hash != c.Outer.Key.Hash()) {
			t.Fatalf("outer key %v hash %x", c.Outer.Key, c.Outer.Hash)
		}
		first := l.first
		if l.link == LinkNFLOG {
			return
		}
		if first == 0 {
			if len(data) == 0 {
				return
			}
			switch data[0] >> 4 {
			case 4:
				first = layers.LayerTypeIPv4
			case 6:
				first = layers.LayerTypeIPv6
			default:
				return
			}
		}
		gp := gopacket.NewPacket(data, first, gopacket.DecodeOptions{NoCopy: true})
		// 0xFFFF is gopacket's own marker for raw IP, not an EtherType,
		// in the Ethernet header and in a VLAN tag alike.
		for _, l := range gp.Layers() {
			switch l := l.(type) {
			case *layers.Ethernet:
				if l.EthernetType == layers.EthernetTypeRaw {
					return
				}
			case *layers.Dot1Q:
				if l.Type == layers.EthernetTypeRaw {
					return
				}
			}
		}
		var src, dst netip.Addr
		var fragmented bool
		if ip, ok := gp.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ok {
			src, _ = netip.AddrFromSlice(ip.SrcIP.To4())
			dst, _ = netip.AddrFromSlice(ip.DstIP.To4())
			fragmented = ip.FragOffset != 0 || ip.Flags&layers.IPv4MoreFragments != 0
			// gopacket does not check the version nibble either.
			if ip.Version != 4 || gp.Layer(layers.LayerTypeIPv6) != nil || gp.Layer(layers.LayerTypeGRE) != nil {
				return // tunnels: gopacket decodes the inner packet, flowmon keys on the outer
			}
		} else if ip, ok := gp.Layer(layers.LayerTypeIPv6).(*layers.IPv6); ok {
			src, _ = netip.AddrFromSlice(ip.SrcIP)
			dst, _ = netip.AddrFromSlice(ip.DstIP)
			fragmented = gp.Layer(layers.LayerTypeIPv6Fragment) != nil
			// gopacket does not check the IPv6 version nibble; flowmon does.
			if ip.Version != 6 || gp.Layer(layers.LayerTypeIPv4) != nil {
				return
			}
		} else {
			return
		}
		if p.Tunnels == 1 {
			outer := p.Carriers.Outer.Directed()
			if outer.Src != src || outer.Dst != dst {
				t.Fatalf("carrier %v, gopacket %v -> %v\n%v", outer, src, dst, gp)
			}
			return
		}
		if fragmented || gp.ErrorLayer() != nil || p.Tunnels > 0 {
			return
		}
		nIP := 0
		for _, l := range gp.Layers() {
			if t := l.LayerType(); t == layers.LayerTypeIPv4 || t == layers.LayerTypeIPv6 {
				nIP++
			}
		}
		if nIP > 1 {
			return // a tunnel gopacket takes off and flowmon does not: a UDP one flowmon finds no packet in
		}
		var sport, dport uint16
		var proto uint8
		tcpL, isTCP := gp.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if isTCP {
			sport, dport, proto = uint16(tcpL.SrcPort), uint16(tcpL.DstPort), ProtoTCP
		} else if u, ok := gp.Layer(layers.LayerTypeUDP).(*layers.UDP); ok {
			sport, dport, proto = uint16(u.SrcPort), uint16(u.DstPort), ProtoUDP
		} else {
			return
		}
		if reason != ReasonNone {
			t.Fatalf("gopacket decodes %v but flowmon says %v", gp, reason)
		}
		want := Key{Src: src, Dst: dst, SrcPort: sport, DstPort: dport, Proto: proto}
		if got := p.Directed(); got != want {
			t.Fatalf("key %v, gopacket %v\n%v", got, want, gp)
		}
		if isTCP {
			if p.Seq != tcpL.Seq || p.Ack != tcpL.Ack || p.Flags&SYN != 0 != tcpL.SYN || p.Flags&ACK != 0 != tcpL.ACK ||
				p.Flags&FIN != 0 != tcpL.FIN || p.Flags&RST != 0 != tcpL.RST {
				t.Fatalf("tcp fields %+v, gopacket %+v", p, tcpL)
			}
		}
	})
}

// FuzzReader feeds arbitrary bytes to the file reader: it must not panic,
// and must end in io.EOF or a *ReadError once a header was accepted.
func FuzzReader(f *testing.F) {
	f.Add(pcapBytes(binary.LittleEndian, false, 1, testFrames(f, 3)))
	f.Add(pcapBytes(binary.BigEndian, true, 101, [][]byte{{0x45, 0, 0, 20}}))
	cut := pcapBytes(binary.LittleEndian, false, 1, testFrames(f, 3))
	f.Add(cut[:len(cut)-5]) // the last record cut short
	f.Add([]byte{0x0a, 0x0d, 0x0d, 0x0a, 0x1c, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1c, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data), "fuzz", int64(len(data)))
		if err != nil {
			return
		}
		var p Packet
		for {
			err := r.Next(&p)
			if err == nil {
				continue
			}
			var re *ReadError
			if err != io.EOF && !errors.As(err, &re) {
				t.Fatalf("Next returned %T %v", err, err)
			}
			// The damage is reported after the packets counted, not
			// after a partial record counted as one more.
			if re != nil && re.Packets != r.Stats().Packets {
				t.Fatalf("error says %d packets, stats %d: %v", re.Packets, r.Stats().Packets, err)
			}
			if r.Next(&p) != err {
				t.Fatalf("the end is not sticky")
			}
			return
		}
	})
}
