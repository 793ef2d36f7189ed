package capture

import (
	"encoding/binary"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowmon/flowmon/internal/testutil/sharedpcaps"
	"github.com/gopacket/gopacket/layers"
)

// Hand-built headers: gopacket serializes none of them.

// ahHeader is an IPsec authentication header (RFC 4302 section 2): next
// header, payload length (the header's length in 4-byte words, minus 2),
// 2 reserved bytes, the SPI, the sequence number, then a 12-byte ICV
// (HMAC-SHA1-96): 24 bytes, so the length field is 4.
func ahHeader(next byte) []byte {
	return cat([]byte{next, 4, 0, 0, 0, 0, 0x10, 0x01, 0, 0, 0, 1}, make([]byte, 12))
}

// nshMD1 is an RFC 8300 network service header of MD type 1 (section 2):
// version 0, O and U 0, TTL 63 (6 bits over the first two bytes), length
// 6 words, MD type 1, the next protocol; the service path header (SPI 3
// bytes, service index 1 byte); 16 bytes of fixed context.
func nshMD1(next byte) []byte {
	return cat([]byte{0x0F, 0xC0 | 6, 0x01, next, 0, 0, 42, 255}, make([]byte, 16))
}

// nshMD2 is an NSH of MD type 2 with one 4-byte context TLV (class 2
// bytes, type, length 1 byte, value): 4 words.
func nshMD2(next byte) []byte {
	return cat([]byte{0x0F, 0xC0 | 4, 0x02, next, 0, 0, 42, 255}, []byte{0, 1, 2, 4, 0x12, 0x34, 0x56, 0x78})
}

// vxlanGPE is a VXLAN-GPE header (draft-ietf-nvo3-vxlan-gpe section 3.2):
// flags I and P (0x0C; version 0), 2 reserved bytes, the next protocol,
// the VNI 123, a reserved byte.
func vxlanGPE(next byte) []byte { return []byte{0x0C, 0, 0, next, 0, 0, 0x7B, 0} }

// nflogRecord is a LINKTYPE_NFLOG record (tcpdump.org's linktypes/
// LINKTYPE_NFLOG): family, version 0, resource id 0 in network order,
// then TLVs in the logging host's byte order: a packet header attribute
// (NFULA_PACKET_HDR 1: hardware protocol, hook, pad), a prefix
// (NFULA_PREFIX 10, "fw" and its NUL: 7 bytes, padded to 8), the payload
// (NFULA_PAYLOAD 9).
func nflogRecord(order binary.ByteOrder, family byte, payload []byte) []byte {
	tlv := func(typ uint16, v []byte) []byte {
		h := make([]byte, 4)
		order.PutUint16(h, uint16(4+len(v)))
		order.PutUint16(h[2:], typ)
		return cat(h, v, make([]byte, (4-len(v)%4)%4))
	}
	return cat([]byte{family, 0, 0, 0}, tlv(1, []byte{0x08, 0x00, 3, 0}), tlv(10, []byte("fw\x00")), tlv(nflogPayload, payload))
}

type shimCase struct {
	name  string
	link  uint16
	data  []byte
	want  Key
	kind  TunnelKind // TunnelNone: no tunnel
	outer uint8      // the carrier's protocol, with a tunnel
}

// shimFrames are crafted frames of each header flowmon passes on the way
// to a flow: IPv4 AH (then TCP, IP in IP, AH, ESP), NSH, VXLAN-GPE and
// NFLOG records.
func shimFrames(t testing.TB) []shimCase {
	f := newTunnelFrames(t)
	echo := frame(t, ip4("10.9.0.1", "10.9.0.2", layers.IPProtocolICMPv4), &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(8, 0), Id: 7, Seq: 1})
	seg := f.in4[20:] // the inner TCP SYN, without its IP header
	ahTCP := Key{Src: outerA, Dst: outerB, SrcPort: 1111, DstPort: 80, Proto: ProtoTCP}
	esp := cat([]byte{0, 0, 0x10, 0x01, 0, 0, 0, 1}, make([]byte, 32)) // SPI, sequence, ciphertext
	nshEth := frame(t, eth(0))[:12]
	return []shimCase{
		{"ah tcp", LinkEthernet, f.overIP(protoAH, cat(ahHeader(ProtoTCP), seg)), ahTCP, TunnelNone, 0},
		{"ah ah tcp", LinkEthernet, f.overIP(protoAH, cat(ahHeader(protoAH), ahHeader(ProtoTCP), seg)), ahTCP, TunnelNone, 0},
		{"ah ip icmp", LinkEthernet, f.overIP(protoAH, cat(ahHeader(protoIPIP), echo)),
			Key{Src: netip.MustParseAddr("10.9.0.1"), Dst: netip.MustParseAddr("10.9.0.2"), SrcPort: 8, DstPort: 0, Proto: ProtoICMP}, TunnelIP, protoIPIP},
		{"ah esp", LinkEthernet, f.overIP(protoAH, cat(ahHeader(ProtoESP), esp)), Key{Src: outerA, Dst: outerB, Proto: ProtoESP}, TunnelNone, 0},
		{"esp", LinkEthernet, f.overIP(ProtoESP, esp), Key{Src: outerA, Dst: outerB, Proto: ProtoESP}, TunnelNone, 0},
		{"ipv6 ah tcp", LinkEthernet, f.overIP6(protoAH, cat(ahHeader(ProtoTCP), frame(t, ip6("2001:db8:ff::1", "2001:db8:ff::2", layers.IPProtocolTCP), tcp(1111, 80, true, false))[40:])),
			Key{Src: netip.MustParseAddr("2001:db8:ff::1"), Dst: netip.MustParseAddr("2001:db8:ff::2"), SrcPort: 1111, DstPort: 80, Proto: ProtoTCP}, TunnelNone, 0},
		{"nsh md1 ipv4", LinkEthernet, cat(nshEth, []byte{0x89, 0x4F}, nshMD1(nshNextIPv4), f.in4), inner4, TunnelNone, 0},
		{"nsh md2 ipv6", LinkEthernet, cat(nshEth, []byte{0x89, 0x4F}, nshMD2(nshNextIPv6), f.in6), inner6, TunnelNone, 0},
		{"nsh ethernet", LinkEthernet, cat(nshEth, []byte{0x89, 0x4F}, nshMD2(nshNextEthernet), f.inEth), inner4, TunnelNone, 0},
		{"vxlan-gpe ipv4", LinkEthernet, f.overUDP(40000, PortVXLANGPE, cat(vxlanGPE(nshNextIPv4), f.in4)), inner4, TunnelVXLANGPE, ProtoUDP},
		{"vxlan-gpe ipv6", LinkEthernet, f.overUDP(40000, PortVXLANGPE, cat(vxlanGPE(nshNextIPv6), f.in6)), inner6, TunnelVXLANGPE, ProtoUDP},
		{"vxlan-gpe ethernet", LinkEthernet, f.overUDP(40000, PortVXLANGPE, cat(vxlanGPE(nshNextEthernet), f.inEth)), inner4, TunnelVXLANGPE, ProtoUDP},
		{"vxlan-gpe nsh", LinkEthernet, f.overUDP(40000, PortVXLANGPE, cat(vxlanGPE(nshNextNSH), nshMD1(nshNextIPv4), f.in4)), inner4, TunnelVXLANGPE, ProtoUDP},
		{"nflog ipv4 little-endian", LinkNFLOG, nflogRecord(binary.LittleEndian, 2, f.in4), inner4, TunnelNone, 0},
		{"nflog ipv6 big-endian", LinkNFLOG, nflogRecord(binary.BigEndian, 10, f.in6), inner6, TunnelNone, 0},
	}
}

func TestDecodeShims(t *testing.T) {
	for _, c := range shimFrames(t) {
		t.Run(c.name, func(t *testing.T) {
			var p Packet
			if r := Decode(&p, c.link, c.data, len(c.data), ts0); r != ReasonNone {
				t.Fatalf("reason %v", r)
			}
			if p.Directed() != c.want || p.Hash != c.want.Hash() {
				t.Fatalf("key %v, want %v", p.Directed(), c.want)
			}
			if p.Tunnel != c.kind || (c.kind == TunnelNone) != (p.Tunnels == 0) {
				t.Fatalf("%d tunnels (%v), want %v", p.Tunnels, p.Tunnel, c.kind)
			}
			if c.kind != TunnelNone {
				outer := p.Carriers.Outer.Directed()
				if outer.Src != outerA || outer.Dst != outerB || outer.Proto != c.outer {
					t.Fatalf("carrier %v, want %v -> %v protocol %d", outer, outerA, outerB, c.outer)
				}
			}
			if n := testing.AllocsPerRun(100, func() { Decode(&p, c.link, c.data, len(c.data), ts0) }); n != 0 {
				t.Fatalf("Decode allocates %v times", n)
			}
		})
	}
}

// TestDecodeShimsMatchTshark writes the crafted frames to captures and
// has tshark decode them: the innermost addresses and TCP/UDP ports must
// be flowmon's.
func TestDecodeShimsMatchTshark(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark is not installed (Debian package tshark)")
	}
	// A capture's byte order is its writer's, which tshark takes for
	// NFLOG's attributes: the big-endian records go in a big-endian file.
	type file struct {
		link uint16
		big  bool
	}
	files := map[file][]shimCase{}
	for _, c := range shimFrames(t) {
		k := file{c.link, strings.Contains(c.name, "big-endian")}
		files[k] = append(files[k], c)
	}
	dir := t.TempDir()
	for k, cases := range files {
		frames := make([][]byte, len(cases))
		for i, c := range cases {
			frames[i] = c.data
		}
		var order binary.ByteOrder = binary.LittleEndian
		if k.big {
			order = binary.BigEndian
		}
		path := filepath.Join(dir, "shims.pcap")
		if err := os.WriteFile(path, pcapBytes(order, false, uint32(k.link), frames), 0o644); err != nil {
			t.Fatal(err)
		}
		want := tsharkFrames(t, path)
		if len(want) != len(cases) {
			t.Fatalf("%+v: tshark read %d frames of %d", k, len(want), len(cases))
		}
		for i, c := range cases {
			w := want[i]
			if !w.ok || w.src != c.want.Src || w.dst != c.want.Dst ||
				((c.want.Proto == ProtoTCP || c.want.Proto == ProtoUDP) && (w.sport != c.want.SrcPort || w.dport != c.want.DstPort)) {
				t.Errorf("%s: tshark %+v, flowmon %v", c.name, w, c.want)
			}
		}
	}
}

func TestDecodeShimsMalformed(t *testing.T) {
	f := newTunnelFrames(t)
	seg := f.in4[20:]
	nshEth := cat(frame(t, eth(0))[:12], []byte{0x89, 0x4F})
	nflog := nflogRecord(binary.LittleEndian, 2, f.in4)
	cases := []struct {
		name string
		link uint16
		data []byte
		want Reason
	}{
		{"ah cut short", LinkEthernet, f.overIP(protoAH, ahHeader(ProtoTCP)[:20]), ReasonAHTruncated},
		{"ah one byte", LinkEthernet, f.overIP(protoAH, []byte{6}), ReasonAHTruncated},
		{"ah length past the packet", LinkEthernet, f.overIP(protoAH, cat([]byte{6, 200}, ahHeader(ProtoTCP)[2:], seg)), ReasonAHTruncated},
		{"nsh version 1", LinkEthernet, cat(nshEth, []byte{0x4F}, nshMD1(nshNextIPv4)[1:], f.in4), ReasonNSHHeader},
		{"nsh length 1", LinkEthernet, cat(nshEth, []byte{0x0F, 0xC1}, nshMD1(nshNextIPv4)[2:], f.in4), ReasonNSHHeader},
		{"nsh cut short", LinkEthernet, cat(nshEth, nshMD1(nshNextIPv4)[:12]), ReasonNSHHeader},
		{"nsh next protocol unknown", LinkEthernet, cat(nshEth, nshMD1(0x7F), f.in4), ReasonNotIP},
		{"vxlan-gpe cut short", LinkEthernet, f.overUDP(40000, PortVXLANGPE, vxlanGPE(nshNextIPv4)[:4]), ReasonTunnelTruncated},
		{"vxlan-gpe nsh cut short", LinkEthernet, f.overUDP(40000, PortVXLANGPE, cat(vxlanGPE(nshNextNSH), nshMD1(nshNextIPv4)[:10])), ReasonNSHHeader},
		{"nflog version 1", LinkNFLOG, cat([]byte{2, 1}, nflog[2:]), ReasonNFLOGHeader},
		{"nflog without payload", LinkNFLOG, nflog[:4+8+8], ReasonNFLOGHeader},
		{"nflog attribute length 2", LinkNFLOG, cat(nflog[:4], []byte{2, 0, 1, 0}, nflog[8:]), ReasonNFLOGHeader},
		{"nflog attribute cut short", LinkNFLOG, nflog[:4+2], ReasonNFLOGHeader},
		{"nflog header cut short", LinkNFLOG, nflog[:3], ReasonLinkTruncated},
		{"nflog family unknown", LinkNFLOG, cat([]byte{7}, nflog[1:]), ReasonNotIP},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p Packet
			if r := Decode(&p, c.link, c.data, len(c.data), ts0); r != c.want {
				t.Fatalf("reason %v, want %v", r, c.want)
			}
			if c.want != ReasonNotIP && !c.want.Malformed() {
				t.Fatalf("%v is not counted as malformed", c.want)
			}
		})
	}
	// A VXLAN-GPE header of another version is no tunnel: the datagram
	// is its UDP flow.
	data := f.overUDP(40000, PortVXLANGPE, cat([]byte{0x1C, 0, 0, 1, 0, 0, 0x7B, 0}, f.in4))
	var p Packet
	if r := Decode(&p, LinkEthernet, data, len(data), ts0); r != ReasonNone || p.Tunnels != 0 || p.Directed().DstPort != PortVXLANGPE {
		t.Fatalf("vxlan-gpe version 1: %v, %d tunnels, key %v", r, p.Tunnels, p.Directed())
	}
	// Nor is one whose next protocol carries no packet flowmon reads: 0,
	// as without the P bit, which tshark does not decode either.
	data = f.overUDP(40000, PortVXLANGPE, cat([]byte{0x08, 0, 0, 0, 0, 0, 0x7B, 0}, f.inEth))
	if r := Decode(&p, LinkEthernet, data, len(data), ts0); r != ReasonNone || p.Tunnels != 0 || p.Directed().DstPort != PortVXLANGPE {
		t.Fatalf("vxlan-gpe without a next protocol: %v, %d tunnels, key %v", r, p.Tunnels, p.Directed())
	}
	// With its port list empty VXLAN-GPE is off, as in Zeek.
	o := DefaultDecodeOptions()
	o.VXLANGPEPorts = nil
	data = f.overUDP(40000, PortVXLANGPE, cat(vxlanGPE(nshNextIPv4), f.in4))
	if r := o.Compiled().Decode(&p, LinkEthernet, data, len(data), ts0); r != ReasonNone || p.Tunnels != 0 || p.Directed().DstPort != PortVXLANGPE {
		t.Fatalf("vxlan-gpe off: %v, %d tunnels, key %v", r, p.Tunnels, p.Directed())
	}
}

// ipsecTraces are the shared captures of AH and ESP: tshark names the
// protocol each packet's flow is of (its last layer), flowmon keys it.
var ipsecTraces = []string{"arkime/ah-esp.pcap", "tcpdump/OSPFv3_with_AH.pcap", "arkime/wireshark-esp.pcap",
	"suricata-verify/eve-flow-esp/input.pcap", "tcpdump/02-sunrise-sunset-esp.pcap"}

// TestIPsecMatchesTshark checks the real AH and ESP captures: past AH the
// flow is the protocol tshark finds after it; ESP is a flow of protocol
// 50 without ports (Zeek's unknown_transport).
func TestIPsecMatchesTshark(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark is not installed (Debian package tshark)")
	}
	protos := map[string]uint8{"esp": ProtoESP, "ospf": 89, "tcp": ProtoTCP, "udp": ProtoUDP, "icmp": ProtoICMP}
	dir := sharedpcaps.Dir(t)
	for _, name := range ipsecTraces {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			out, err := exec.Command("tshark", "-n", "-r", path, "-T", "fields", "-e", "frame.protocols").Output()
			if err != nil {
				t.Fatalf("tshark: %v", err)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			r, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var p Packet
			checked := 0
			for i := 0; ; i++ {
				data, err := r.pcap.next()
				if err != nil {
					break
				}
				layer := lines[i][strings.LastIndexByte(lines[i], ':')+1:]
				want, ok := protos[layer]
				if !ok {
					continue
				}
				if reason := Decode(&p, r.link, data, r.pcap.wire, r.pcap.ts); reason != ReasonNone || p.Key.Proto != want ||
					(want == ProtoESP && (p.Key.SrcPort != 0 || p.Key.DstPort != 0)) {
					t.Errorf("frame %d (%s): %v %v", i+1, lines[i], reason, p.Directed())
				}
				checked++
			}
			if checked == 0 {
				t.Fatal("no frame checked")
			}
		})
	}
}
