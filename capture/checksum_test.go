package capture

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/flowmon/flowmon/internal/testutil/sharedpcaps"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// checksumCase is a frame gopacket serialised with its checksums, and
// where in it a byte can be flipped to spoil one.
type checksumCase struct {
	name  string
	data  []byte
	spoil int    // offset of a byte the checksum covers (-1: none)
	bad   Reason // the reason once it is spoilt
}

func checksumCases(t *testing.T) []checksumCase {
	const ethLen, v4Len, v6Len = 14, 20, 40
	odd := gopacket.Payload([]byte("odd-length payload!"))
	icmp4 := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeEchoRequest, 0), Id: 7, Seq: 1}
	icmp6 := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeEchoRequest, 0)}
	udpZero := frame(t, eth(layers.EthernetTypeIPv4), ip4("10.0.0.1", "10.0.0.2", layers.IPProtocolUDP), udp(53, 5353), odd)
	udpZero[ethLen+v4Len+6], udpZero[ethLen+v4Len+7] = 0, 0
	udp6Zero := frame(t, eth(layers.EthernetTypeIPv6), ip6("2001:db8::1", "2001:db8::2", layers.IPProtocolUDP), udp(53, 5353), odd)
	udp6Zero[ethLen+v6Len+6], udp6Zero[ethLen+v6Len+7] = 0, 0
	return []checksumCase{
		{"ipv4 header", frame(t, eth(layers.EthernetTypeIPv4), ip4("10.0.0.1", "10.0.0.2", layers.IPProtocolTCP), tcp(1, 2, true, false)), ethLen + 8, ReasonBadIPChecksum},
		{"tcp", frame(t, eth(layers.EthernetTypeIPv4), ip4("10.0.0.1", "10.0.0.2", layers.IPProtocolTCP), tcp(40000, 443, false, true), odd), ethLen + v4Len + 25, ReasonBadTCPChecksum},
		{"tcp ports", frame(t, eth(layers.EthernetTypeIPv4), ip4("10.0.0.1", "10.0.0.2", layers.IPProtocolTCP), tcp(40000, 443, false, true), odd), ethLen + v4Len + 1, ReasonBadTCPChecksum},
		{"udp", frame(t, eth(layers.EthernetTypeIPv4), ip4("10.0.0.1", "10.0.0.2", layers.IPProtocolUDP), udp(53, 5353), odd), ethLen + v4Len + 8, ReasonBadUDPChecksum},
		{"udp no checksum over ipv4", udpZero, ethLen + v4Len + 8, ReasonNone},
		{"icmp", frame(t, eth(layers.EthernetTypeIPv4), ip4("10.0.0.1", "10.0.0.2", layers.IPProtocolICMPv4), icmp4, odd), ethLen + v4Len + 9, ReasonBadICMPChecksum},
		{"tcp over ipv6", frame(t, eth(layers.EthernetTypeIPv6), ip6("2001:db8::1", "2001:db8::2", layers.IPProtocolTCP), tcp(40000, 443, true, false), odd), ethLen + v6Len + 21, ReasonBadTCPChecksum},
		{"udp over ipv6", frame(t, eth(layers.EthernetTypeIPv6), ip6("2001:db8::1", "2001:db8::2", layers.IPProtocolUDP), udp(53, 5353), odd), ethLen + v6Len + 9, ReasonBadUDPChecksum},
		{"icmpv6", frame(t, eth(layers.EthernetTypeIPv6), ip6("2001:db8::1", "2001:db8::2", layers.IPProtocolICMPv6), icmp6, odd), ethLen + v6Len + 6, ReasonBadICMPChecksum},
		// The pseudo-header counts: a different source address spoils it.
		{"tcp pseudo-header", frame(t, eth(layers.EthernetTypeIPv6), ip6("2001:db8::1", "2001:db8::2", layers.IPProtocolTCP), tcp(40000, 443, true, false), odd), ethLen + 8 + 15, ReasonBadTCPChecksum},
		{"udp zero over ipv6", udp6Zero, -1, ReasonBadUDPChecksum},
	}
}

// TestVerifyChecksums checks the verdicts on frames gopacket serialised
// with their checksums: each passes as written and fails, with its
// reason, once a byte its checksum covers is flipped; without the option
// nothing is checked.
func TestVerifyChecksums(t *testing.T) {
	verify := DecodeOptions{VerifyChecksums: true}
	var p Packet
	for _, c := range checksumCases(t) {
		want := ReasonNone
		if c.spoil < 0 {
			want = c.bad
		}
		if r := verify.Decode(&p, LinkEthernet, c.data, len(c.data), ts0); r != want {
			t.Errorf("%s: as written: %v, want %v", c.name, r, want)
		}
		if c.spoil < 0 {
			continue
		}
		spoilt := append([]byte(nil), c.data...)
		spoilt[c.spoil] ^= 0x10
		if r := verify.Decode(&p, LinkEthernet, spoilt, len(spoilt), ts0); r != c.bad {
			t.Errorf("%s: spoilt: %v, want %v", c.name, r, c.bad)
		}
		if r := Decode(&p, LinkEthernet, spoilt, len(spoilt), ts0); c.bad != ReasonBadIPChecksum && r != ReasonNone {
			t.Errorf("%s: spoilt, not verified: %v", c.name, r)
		}
		// Cut short of its end, the segment cannot be checked: it passes.
		if c.bad != ReasonBadIPChecksum {
			cut := spoilt[:len(spoilt)-1]
			if r := verify.Decode(&p, LinkEthernet, cut, len(spoilt), ts0); r != ReasonNone {
				t.Errorf("%s: spoilt and cut: %v, want none (not checked)", c.name, r)
			}
		}
	}
}

func TestVerifyChecksumsNoAllocs(t *testing.T) {
	data := ethTCP(t)
	o := DecodeOptions{VerifyChecksums: true}
	var p Packet
	if n := testing.AllocsPerRun(1000, func() { o.Decode(&p, LinkEthernet, data, len(data), ts0) }); n != 0 {
		t.Fatalf("Decode with checksums allocates %v times per packet", n)
	}
}

// TestChecksumsMatchTshark compares flowmon's verdict on every checksum
// of the real captures with Wireshark's (tshark with its IPv4, TCP and
// UDP checksum checks on; it checks ICMP's always): a packet tshark finds
// a bad checksum in must be skipped with that reason, and one whose
// checksums it finds good must decode. Left out are the frames where the
// two do not look at the same checksum: those with more than one IP
// header (tunnels), IP fragments (tshark checks the reassembled
// segment), and frames under a link layer flowmon does not decode. It
// skips, saying so, without tshark.
func TestChecksumsMatchTshark(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: tshark over the real captures takes a while")
	}
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark not installed (Debian package tshark): checksum verdicts not compared with Wireshark's")
	}
	const (
		bad  = "0" // tshark's checksum.status: Bad
		good = "1"
	)
	fields := []string{"frame.number", "frame.protocols", "ip.flags.mf", "ip.frag_offset", "ipv6.fragment",
		"ip.checksum.status", "tcp.checksum.status", "udp.checksum.status", "icmp.checksum.status", "icmpv6.checksum.status"}
	reasons := []Reason{ReasonBadIPChecksum, ReasonBadTCPChecksum, ReasonBadUDPChecksum, ReasonBadICMPChecksum, ReasonBadICMPChecksum}
	compared, badSeen := map[Reason]int{}, map[Reason]int{}
	var differ []string
	for _, c := range sharedpcaps.Captures(t) {
		if !strings.HasPrefix(c.Name, "zeek/") || c.Packets < 1 || c.Packets > 5000 || !strings.Contains(c.Link, "EN10MB") && !strings.Contains(c.Link, "RAW") {
			continue
		}
		args := []string{"-r", c.Path, "-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE", "-T", "fields", "-E", "separator=|"}
		for _, f := range fields {
			args = append(args, "-e", f)
		}
		out, err := exec.Command("tshark", args...).Output()
		if err != nil {
			continue // a file tshark cannot read is not a checksum question
		}
		// want[frame] is the reason flowmon must give, ReasonNone for a
		// frame whose checksums tshark found good.
		want := map[uint64]Reason{}
		for line := range strings.Lines(string(out)) {
			f := strings.Split(strings.TrimRight(line, "\n"), "|")
			if len(f) < len(fields) {
				continue
			}
			ips := strings.Count(":"+f[1]+":", ":ip:") + strings.Count(":"+f[1]+":", ":ipv6:")
			if ips != 1 || f[2] == "1" || f[2] == "True" || f[3] != "" && f[3] != "0" || f[4] != "" ||
				strings.Contains(f[1], ":icmp") && strings.Count(f[1], ":ip") > 1 {
				continue
			}
			r, checked := ReasonNone, false
			for i, st := range f[5:10] {
				if st == bad && r == ReasonNone {
					r = reasons[i]
				}
				checked = checked || st == bad || st == good
			}
			if !checked {
				continue
			}
			var n uint64
			for _, ch := range f[0] {
				n = n*10 + uint64(ch-'0')
			}
			want[n] = r
		}
		if len(want) == 0 {
			continue
		}
		got := verdicts(t, c.Path)
		for n, r := range want {
			g, ok := got[n]
			if !ok || g != ReasonNone && g < ReasonBadIPChecksum {
				continue // skipped for another reason (a link layer flowmon does not take)
			}
			compared[r]++
			if r != ReasonNone {
				badSeen[r]++
			}
			if g != r {
				differ = append(differ, c.Name+" frame "+itoa(n)+": tshark "+r.String()+", flowmon "+g.String())
			}
		}
	}
	t.Logf("frames compared by tshark's verdict: %v; bad checksums among them: %v", compared, badSeen)
	for _, d := range differ {
		name, _, _ := strings.Cut(d, " frame ")
		if why, ok := checksumDiffCauses[name]; ok {
			t.Logf("%s (%s)", d, why)
			continue
		}
		t.Errorf("%s: no known cause", d)
	}
	if compared[ReasonNone] < 1000 || badSeen[ReasonBadTCPChecksum] == 0 {
		t.Errorf("too few frames compared (%v): the captures' manifest or tshark's fields changed?", compared)
	}
}

// checksumDiffCauses are the captures where tshark's verdict differs
// from flowmon's, and why.
var checksumDiffCauses = map[string]string{
	// Frames of 1506 bytes whose IP total length runs past the capture.
	"zeek/tcp/reassembly.pcap": "segment not captured whole: tshark checks the part captured, flowmon and Zeek check nothing",
	// The PPPoE header says 40 bytes of IP, the IP header 46.
	"zeek/pppoe-over-qinq.pcap": "PPPoE length below the IP total length: tshark cuts the segment at the PPPoE length, flowmon (as Zeek) takes the IP header's",
	// RFC 8200 8.1: the pseudo-header's destination is the routing
	// header's last address.
	"zeek/ipv6-hbh-routing0.pcap": "IPv6 routing header with segments left: the pseudo-header takes its final address, flowmon the IPv6 header's",
}

// verdicts decodes every frame of a capture with the checksums verified:
// its reason by frame number (from 1).
func verdicts(t *testing.T, path string) map[uint64]Reason {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type frameReader interface {
		ReadPacketData() ([]byte, gopacket.CaptureInfo, error)
	}
	var rd frameReader
	var link func(int) uint16
	if r, err := pcapgo.NewReader(f); err == nil {
		rd, link = r, func(int) uint16 { return uint16(r.LinkType()) }
	} else if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	} else if ng, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions); err == nil {
		rd = ng
		link = func(i int) uint16 {
			if intf, err := ng.Interface(i); err == nil {
				return uint16(intf.LinkType)
			}
			return 0
		}
	} else {
		return nil
	}
	o := DecodeOptions{VerifyChecksums: true}
	got := map[uint64]Reason{}
	var p Packet
	for n := uint64(1); ; n++ {
		data, ci, err := rd.ReadPacketData()
		if err != nil {
			return got
		}
		got[n] = o.Decode(&p, link(ci.InterfaceIndex), data, ci.Length, ci.Timestamp)
	}
}

func itoa(n uint64) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for ; n > 0; n /= 10 {
		i--
		b[i] = byte('0' + n%10)
	}
	return string(b[i:])
}

func BenchmarkDecodeVerifyChecksums(b *testing.B) {
	data := ethTCP(b)
	o := DecodeOptions{VerifyChecksums: true}
	var p Packet
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		o.Decode(&p, LinkEthernet, data, len(data), ts0)
	}
}

// BenchmarkVerifyTransport is a full-size TCP segment's checksum.
func BenchmarkVerifyTransport(b *testing.B) {
	data := frame(b, eth(layers.EthernetTypeIPv4), ip4("10.0.0.1", "10.0.0.2", layers.IPProtocolTCP),
		tcp(40000, 443, false, true), gopacket.Payload(make([]byte, 1460)))
	seg := data[34:]
	src, dst := data[26:30], data[30:34]
	b.ReportAllocs()
	b.SetBytes(int64(len(seg)))
	for b.Loop() {
		if verifyTransport(src, dst, ProtoTCP, seg, len(seg)) != ReasonNone {
			b.Fatal("bad checksum")
		}
	}
}
