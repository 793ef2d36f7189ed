package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/flowmon/flowmon/internal/testutil/sharedpcaps"
	"github.com/flowmon/flowmon/record/connlog"
)

// TestCommunityIDMatchesTshark replays real captures and checks the flow
// records' community_id against the IDs tshark's communityid dissector
// gives the same packets: every ID tshark gives a TCP, UDP, SCTP, ICMP or
// ICMPv6 packet must be a record's. Left out are the packets where the
// two do not speak of the same flow: those with more than one IP header
// (tshark gives the innermost flow's ID for a tunnel's packets and an
// ICMP error's quoted packet's for the error, where flowmon's record is
// of the outer flow until it decodes tunnels), the datagrams over 64 KiB
// of the one trace made of them (tshark delivers one, flowmon and Zeek
// refuse them: overLarge), the
// packets under a link or encapsulation layer flowmon's decoder does not
// take (NSH, Cisco MetaData and FabricPath, Ethernet over MPLS
// pseudowires: they reach no flow), and the packets tshark finds broken
// (an expert error, such as a UDP length below 8). It skips, saying so,
// without tshark.
func TestCommunityIDMatchesTshark(t *testing.T) {
	const expertError = "8388608" // _ws.expert.severity of an error (PI_ERROR)
	if testing.Short() {
		t.Skip("-short: tshark over the real captures takes a minute")
	}
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark not installed (Debian package tshark): Community IDs not compared with Wireshark's")
	}
	var captures, flows, matched int
	byProto := map[string]int{} // IDs compared, by the packets' transport
	var differ []string
	for _, c := range sharedpcaps.Captures(t) {
		if c.Packets < 20 || c.Packets > 5000 || !strings.Contains(c.Link, "EN10MB") && !strings.Contains(c.Link, "RAW") || c.Name == overLarge {
			continue
		}
		out, err := exec.Command("tshark", "-r", c.Path, "--enable-protocol", "communityid", "-T", "fields", "-E", "separator=|",
			"-e", "communityid", "-e", "frame.protocols", "-e", "_ws.expert.severity").Output()
		if err != nil {
			continue // a file tshark cannot read is not a Community ID question
		}
		want := map[string]bool{}
		for line := range strings.Lines(string(out)) {
			f := strings.Split(strings.TrimSpace(line), "|")
			if len(f) < 3 || f[0] == "" || strings.Contains(f[0], ",") || strings.Contains(f[2], expertError) {
				continue
			}
			ips, transport, decoded := 0, "", true
			for _, l := range strings.Split(f[1], ":") {
				switch l {
				case "ip", "ipv6":
					ips++
				case "tcp", "udp", "sctp", "icmp", "icmpv6":
					transport = l
				case "nsh", "cmd", "cfp", "pwethheuristic", "pwethcw":
					decoded = decoded && ips > 0
				}
			}
			if ips != 1 || transport == "" || !decoded {
				continue
			}
			if !want[f[0]] {
				byProto[transport]++
			}
			want[f[0]] = true
		}
		if len(want) == 0 {
			continue
		}
		cfg := DefaultConfig()
		cfg.Workers = 1
		cfg.ACSM.Capacity, cfg.FlowCount.ExpectedFlows, cfg.MaxFlows = 1<<14, 1<<14, 1<<14
		cfg.Dedup.PacketsPerWindow = 1024
		var log bytes.Buffer
		cfg.Sinks = connLog(&log)
		if s, _ := Replay(context.Background(), []string{c.Path}, ReplayOptions{Config: cfg}); s == nil {
			continue
		}
		have := map[string]bool{}
		sc := bufio.NewScanner(&log)
		for sc.Scan() {
			var r connlog.Record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			have[r.CommunityID] = true
			flows++
		}
		captures++
		for id := range want {
			if have[id] {
				matched++
			} else {
				differ = append(differ, c.Name+": "+id)
			}
		}
	}
	slices.Sort(differ)
	for _, d := range differ {
		t.Errorf("tshark's ID is no flow record's: %s", d)
	}
	t.Logf("%d captures, %d flow records; of the %d IDs tshark gave their packets (%v), %d are records', %d not", captures, flows, matched+len(differ), byProto, matched, len(differ))
	for _, p := range []string{"tcp", "udp", "icmp", "icmpv6"} {
		if byProto[p] == 0 {
			t.Errorf("no %s flow compared", p)
		}
	}
	if captures < 20 {
		t.Errorf("only %d captures compared", captures)
	}
}
