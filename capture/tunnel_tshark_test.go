package capture

import (
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/flowmon/flowmon/internal/testutil/sharedpcaps"
)

// tsharkTunnelTraces are shared tunnel and link-layer captures Zeek has no
// conn.log baseline for: tshark decodes each on its own.
var tsharkTunnelTraces = []string{
	"zeek/tunnels/gre-sample.pcap", "zeek/tunnels/gre-pptp.pcap", "zeek/tunnels/gre-within-gre.pcap",
	"zeek/tunnels/vxlan.pcap", "zeek/tunnels/geneve.pcap", "zeek/pbb.pcap", "zeek/vntag.pcap",
	"zeek/vntag_vlan_sandwich_clean.pcap", "zeek/cisco-fabric-path.pcap", "arkime/gre-erspan-vxlan.pcap",
	"tcpdump/erspan-type-i-4.pcap", "tcpdump/erspan-type-ii-3.pcap", "tcpdump/erspan-type-iii-ft-7.pcap",
	"tcpdump/nsh.pcap", "tcpdump/nsh-over-vxlan-gpe.pcap", "suricata-verify/decode-nsh-type1/input.pcap",
	"suricata-verify/decode-nsh-type2/input.pcap", "tcpdump/nflog.pcap", "zeek/nflog-http.pcap", "arkime/nflog.pcap",
	"arkime/ah-esp.pcap", "tcpdump/OSPFv3_with_AH.pcap",
}

// tsharkInner is the innermost IP header tshark finds in each frame: its
// addresses, and its TCP or UDP ports (0 for other protocols); ok is
// false when tshark finds no IP header outside an ICMP error's quote.
type tsharkInner struct {
	src, dst     netip.Addr
	sport, dport uint16
	ok           bool
	partial      bool // an IP header tshark calls malformed, its addresses not all read
}

func tsharkFrames(t *testing.T, path string) []tsharkInner {
	out, err := exec.Command("tshark", "-n", "-r", path, "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a",
		"-E", "aggregator=,", "-e", "frame.protocols", "-e", "ip.src", "-e", "ip.dst", "-e", "ipv6.src", "-e", "ipv6.dst",
		"-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "udp.srcport", "-e", "udp.dstport").Output()
	if err != nil {
		t.Fatalf("tshark %s: %v", path, err)
	}
	var frames []tsharkInner
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		c := strings.Split(line, "\t")
		for len(c) < 9 {
			c = append(c, "")
		}
		protos := strings.Split(c[0], ":")
		var f tsharkInner
		nIP, nIP6, last := 0, 0, ""
		for i, p := range protos {
			if (p == "ip" || p == "ipv6") && slices.ContainsFunc(protos[:i], func(q string) bool { return q == "icmp" || q == "icmpv6" }) {
				break // a quoted header
			}
			switch p {
			case "ip":
				nIP++
				last = p
			case "ipv6":
				nIP6++
				last = p
			case "tcp", "udp":
				if last == "ip" || last == "ipv6" {
					last += "/" + p
				}
			}
		}
		pick := func(col string, n int) string {
			v := strings.Split(col, ",")
			if n < 1 || n > len(v) {
				return ""
			}
			return v[n-1]
		}
		lastOf := func(col string) uint16 {
			v := strings.Split(col, ",")
			n, _ := strconv.Atoi(v[len(v)-1])
			return uint16(n)
		}
		net, transport, _ := strings.Cut(last, "/")
		var e1, e2 error
		switch net {
		case "ip":
			f.src, e1 = netip.ParseAddr(pick(c[1], nIP))
			f.dst, e2 = netip.ParseAddr(pick(c[2], nIP))
		case "ipv6":
			f.src, e1 = netip.ParseAddr(pick(c[3], nIP6))
			f.dst, e2 = netip.ParseAddr(pick(c[4], nIP6))
		}
		f.ok = net != "" && e1 == nil && e2 == nil
		f.partial = net != "" && !f.ok
		switch transport {
		case "tcp":
			f.sport, f.dport = lastOf(c[5]), lastOf(c[6])
		case "udp":
			f.sport, f.dport = lastOf(c[7]), lastOf(c[8])
		}
		frames = append(frames, f)
	}
	return frames
}

// TestTunnelsMatchTshark decodes every frame of the shared tunnel
// captures Zeek has no baseline for and compares the innermost addresses
// and TCP/UDP ports with tshark's (4.0; frames tshark finds no address
// in, such as ERSPAN copies of spanning tree, flowmon must skip too).
func TestTunnelsMatchTshark(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark is not installed")
	}
	dir := sharedpcaps.Dir(t)
	for _, name := range tsharkTunnelTraces {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			want := tsharkFrames(t, path)
			r, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var p Packet
			tunnelled := 0
			for i := 0; ; i++ {
				data, err := r.pcap.next()
				if err != nil {
					if i != len(want) {
						t.Fatalf("%d frames, tshark %d", i, len(want))
					}
					break
				}
				reason := Decode(&p, r.link, data, r.pcap.wire, r.pcap.ts)
				w := want[i]
				if reason != ReasonNone {
					if w.ok && reason != ReasonNotIP {
						t.Errorf("frame %d: %v, tshark %v -> %v", i+1, reason, w.src, w.dst)
					}
					continue
				}
				if p.Tunnels > 0 {
					tunnelled++
				}
				if w.partial {
					continue // tshark calls the IPv6 header malformed (FabricPath test frames)
				}
				k := p.Directed()
				if !w.ok || k.Src != w.src || k.Dst != w.dst ||
					((k.Proto == ProtoTCP || k.Proto == ProtoUDP) && (k.SrcPort != w.sport || k.DstPort != w.dport)) {
					t.Errorf("frame %d: %v, tshark %+v", i+1, k, w)
				}
			}
			t.Logf("%d frames, %d through a tunnel", len(want), tunnelled)
		})
	}
}
