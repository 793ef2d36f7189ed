package capture

import (
	"bufio"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/flowmon/flowmon/internal/testutil/sharedpcaps"
)

// zeekTunnelTraces are the shared tunnel and link-layer captures Zeek's
// own tests ran on: a replay must yield the connections Zeek logs.
var zeekTunnelTraces = []string{
	"zeek/erspanI.pcap", "zeek/erspanII.pcap", "zeek/erspanIII.pcap",
	"zeek/tunnels/ayiya-large-identity.pcap", "zeek/tunnels/ayiya3.pcap",
	"zeek/tunnels/geneve-47101.pcap", "zeek/tunnels/geneve-arp.pcap", "zeek/tunnels/geneve-ipv6.pcap",
	"zeek/tunnels/geneve-vxlan-dns-truncated.pcap", "zeek/tunnels/gre-aruba-amsdu.pcap",
	"zeek/tunnels/gre-over-udp-4754.pcap",
	"zeek/tunnels/gtp/gtp10_not_0xff.pcap", "zeek/tunnels/gtp/gtp2_different_udp_port.pcap",
	"zeek/tunnels/gtp/gtp3_false_gtp.pcap", "zeek/tunnels/gtp/gtp6_gtp_0x32.pcap",
	"zeek/tunnels/gtp/gtp7_ipv6.pcap", "zeek/tunnels/gtp/gtp8_teredo.pcap",
	"zeek/tunnels/teredo_bubble_with_payload.pcap", "zeek/tunnels/vxlan-encapsulated-http.pcap",
	"zeek/tunnels/vxlan-encapsulated-igmp-v2.pcap",
}

// zeekConns reads groundtruth/zeek_conn.tsv: each trace's connections as
// canonical keys.
func zeekConns(t *testing.T, dir string) map[string]map[Key]bool {
	f, err := os.Open(filepath.Join(dir, "groundtruth", "zeek_conn.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	protos := map[string]uint8{"tcp": ProtoTCP, "udp": ProtoUDP, "icmp": ProtoICMP}
	out := map[string]map[Key]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		c := strings.Split(sc.Text(), "\t")
		if len(c) < 11 || c[0] == "trace" {
			continue
		}
		src, err1 := netip.ParseAddr(c[6])
		dst, err2 := netip.ParseAddr(c[8])
		sp, err3 := strconv.Atoi(c[7])
		dp, err4 := strconv.Atoi(c[9])
		proto, ok := protos[c[10]]
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || !ok {
			continue
		}
		if proto == ProtoICMP && src.Is6() {
			proto = ProtoICMPv6
		}
		k, _ := Key{Src: src, Dst: dst, SrcPort: uint16(sp), DstPort: uint16(dp), Proto: proto}.Canonical()
		if out[c[0]] == nil {
			out[c[0]] = map[Key]bool{}
		}
		out[c[0]][k] = true
	}
	return out
}

// replayConns decodes every frame of a capture and returns the flows a
// Zeek-like connection table would hold: each decoded packet's flow, and
// the carrying UDP flows of every tunnelled packet (Zeek logs those as
// connections of their own; GRE and IP in IP carriers it does not).
func replayConns(t *testing.T, path string, o *DecodeOptions) (map[Key]bool, map[Reason]int) {
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.pcap == nil {
		t.Fatalf("%s: not a classic pcap", path)
	}
	got := map[Key]bool{}
	reasons := map[Reason]int{}
	var p Packet
	for {
		data, err := r.pcap.next()
		if err != nil {
			break
		}
		reason := o.Decode(&p, r.link, data, r.pcap.wire, r.pcap.ts)
		reasons[reason]++
		if p.Fragment == LaterFragment {
			continue // reassembly's part: keyed on the carrier's addresses
		}
		if reason == ReasonNone {
			got[p.Key] = true
			if p.Hash != p.Key.Hash() {
				t.Errorf("%s: hash of %v is not its key's", path, p.Key)
			}
		}
		if p.Tunnels > 0 && p.Carriers.Outer.Key.Proto == ProtoUDP {
			c := &p.Carriers.Outer
			got[c.Key] = true
			if c.Hash != c.Key.Hash() {
				t.Errorf("%s: outer hash of %v is not its key's", path, c.Key)
			}
		}
		if p.Tunnels > 1 && p.Carriers.Outermost.Key.Proto == ProtoUDP {
			c := &p.Carriers.Outermost
			got[c.Key] = true
			if c.Hash != c.Key.Hash() {
				t.Errorf("%s: outermost hash of %v is not its key's", path, c.Key)
			}
		}
	}
	return got, reasons
}

// TestTunnelsMatchZeek replays the shared tunnel captures and checks the
// flows against the connections Zeek's baselines log for them: every
// connection Zeek logs is there, and nothing else but flows of the IP
// protocols the Zeek of those baselines leaves out of conn.log (IGMP).
func TestTunnelsMatchZeek(t *testing.T) {
	dir := sharedpcaps.Dir(t)
	zeek := zeekConns(t, dir)
	o := DefaultDecodeOptions()
	for _, name := range zeekTunnelTraces {
		t.Run(name, func(t *testing.T) {
			want := zeek[name]
			if len(want) == 0 {
				t.Fatalf("no Zeek connections for %s", name)
			}
			got, reasons := replayConns(t, filepath.Join(dir, name), &o)
			for k := range want {
				if !got[k] {
					t.Errorf("Zeek's %v is missing", k)
				}
			}
			for k := range got {
				if !want[k] && slices.Contains([]uint8{ProtoTCP, ProtoUDP, ProtoICMP, ProtoICMPv6}, k.Proto) {
					t.Errorf("%v is not one of Zeek's", k)
				}
			}
			if t.Failed() {
				t.Logf("reasons %v", reasons)
			}
		})
	}
}
