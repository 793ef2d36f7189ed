package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/testutil/sharedpcaps"
	"github.com/flowmon/flowmon/record/connlog"
)

// replayFrags replays one capture as TestConnFieldsMatchZeek does, but
// with every packet counted (no dedup: Zeek and tshark count capture
// duplicates too), and returns its records and summary.
func replayFrags(t *testing.T, path string, defrag bool) ([]connlog.Record, *Summary) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ACSM.Backend = acsm.BackendExact
	cfg.ACSM.Capacity, cfg.FlowCount.ExpectedFlows, cfg.MaxFlows = 4096, 4096, 4096
	cfg.Workers = 1
	cfg.NoDedup = true
	cfg.NoDefrag = !defrag
	var log bytes.Buffer
	cfg.Sinks = connLog(&log)
	s, err := Replay(context.Background(), []string{path}, ReplayOptions{Config: cfg})
	if s == nil {
		t.Fatalf("%s: %v", path, err)
	}
	return readJSONLines[connlog.Record](t, log.Bytes()), s
}

// TestDefragMatchesZeek: the fragment traces' records are Zeek's
// connections (testdata/zeek_frag_conn.tsv, from Zeek's own baselines):
// the same 5-tuples, with Zeek's packet counts where its baseline gives
// them, and no connection where Zeek has none. Without reassembly they
// are not: the check would fail on the fragmented DNS answer.
func TestDefragMatchesZeek(t *testing.T) {
	dir := sharedpcaps.Dir(t)
	type conn struct {
		orig, resp         netip.AddrPort
		proto              string
		origPkts, respPkts int
	}
	want := map[string][]conn{}
	f, err := os.ReadFile("testdata/zeek_frag_conn.tsv")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(f)) {
		c := strings.Split(strings.TrimSpace(line), "\t")
		if strings.HasPrefix(line, "#") || len(c) != 9 || c[0] == "trace" {
			continue
		}
		if c[6] == "-" {
			want[c[0]] = nil
			continue
		}
		var k conn
		k.orig = netip.MustParseAddrPort(fmt.Sprintf("[%s]:%s", c[2], c[3]))
		k.resp = netip.MustParseAddrPort(fmt.Sprintf("[%s]:%s", c[4], c[5]))
		k.proto = c[6]
		k.origPkts, _ = strconv.Atoi(c[7])
		k.respPkts, _ = strconv.Atoi(c[8])
		want[c[0]] = append(want[c[0]], k)
	}
	if len(want) != 3 {
		t.Fatalf("%d traces in the baseline, want 3", len(want))
	}
	for _, trace := range slices.Sorted(maps.Keys(want)) {
		recs, s := replayFrags(t, filepath.Join(dir, trace), true)
		conns := want[trace]
		if conns == nil && len(recs) != 0 {
			t.Errorf("%s: %d records, Zeek has no connection", trace, len(recs))
		}
		for _, w := range conns {
			found := false
			for _, r := range recs {
				o, p := netip.AddrPortFrom(r.OrigH, r.OrigP), netip.AddrPortFrom(r.RespH, r.RespP)
				if r.Proto != w.proto || o != w.orig || p != w.resp {
					continue
				}
				found = true
				if w.origPkts >= 0 && (int(r.OrigPkts) != w.origPkts || int(r.RespPkts) != w.respPkts) {
					t.Errorf("%s: %v > %v: %d/%d packets, Zeek %d/%d", trace, o, p, r.OrigPkts, r.RespPkts, w.origPkts, w.respPkts)
				}
			}
			if !found {
				t.Errorf("%s: no record of Zeek's %s %v > %v", trace, w.proto, w.orig, w.resp)
			}
		}
		t.Logf("%s: %d records; defrag %+v", trace, len(recs), s.Defrag)
	}
	// Left as they are, the fragments after the first make a flow of
	// their own, with no ports, which Zeek does not have.
	recs, _ := replayFrags(t, filepath.Join(dir, "zeek/ipv6-fragmented-dns.pcap"), false)
	if !slices.ContainsFunc(recs, func(r connlog.Record) bool { return r.OrigP == 0 && r.RespP == 0 }) {
		t.Errorf("without reassembly no flow of later fragments: %+v", recs)
	}
}

// overLarge is the trace whose datagrams wrap IPv6's payload length:
// tshark delivers one of them, Zeek and flowmon refuse both
// (TestDefragMatchesZeek).
const overLarge = "zeek/ipv6-reassembly-state-leak.pcap"

// tuple is a TCP or UDP 5-tuple in canonical order.
type tuple struct {
	a, b  netip.AddrPort
	proto string
}

func canonical(proto string, x, y netip.AddrPort) tuple {
	if x.Compare(y) > 0 {
		x, y = y, x
	}
	return tuple{x, y, proto}
}

// TestDefragMatchesTshark: in the shared captures with IP fragments
// (the manifest's ip-fragments tag or "frag" in the name; tunnels, MPLS
// and tcpdump's fuzzed files left out: which flows they make is the
// decoder's question), the replay's TCP and UDP records
// count, 5-tuple by 5-tuple, the packets tshark shows with its own
// reassembly: a datagram is one packet, at its last fragment. Only
// packets with one IP header on tshark's side count; the files tshark
// cannot read, or flowmon's decoder refuses a packet of, are left out.
// It skips without tshark.
func TestDefragMatchesTshark(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark not installed (Debian package tshark): reassembly not compared with Wireshark's")
	}
	dir := sharedpcaps.Dir(t)
	man, err := os.ReadFile(filepath.Join(dir, "MANIFEST.tsv"))
	if err != nil {
		t.Skip(err)
	}
	var traces []string
	for line := range strings.Lines(string(man)) {
		c := strings.Split(line, "\t")
		if len(c) < 13 || c[5] != "capture" || !strings.Contains(c[12], "ip-fragments") && !strings.Contains(c[0], "frag") || strings.Contains(c[12], "tunnel") ||
			strings.Contains(c[12], "mpls") || strings.HasPrefix(c[0], "tcpdump/") ||
			c[0] == overLarge {
			continue
		}
		traces = append(traces, c[0])
	}
	compared, frags := 0, uint64(0)
	var names []string
	for _, trace := range traces {
		path := filepath.Join(dir, trace)
		out, err := exec.Command("tshark", "-n", "-r", path, "-o", "ip.defragment:TRUE", "-o", "ipv6.defragment:TRUE",
			"-T", "fields", "-E", "separator=|", "-e", "ip.src", "-e", "ipv6.src", "-e", "ip.dst", "-e", "ipv6.dst",
			"-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "udp.srcport", "-e", "udp.dstport", "-Y", "tcp or udp").Output()
		if err != nil {
			continue
		}
		want := map[tuple]int{}
		for line := range strings.Lines(string(out)) {
			c := strings.Split(strings.TrimSpace(line), "|")
			if len(c) != 8 || strings.Contains(line, ",") {
				continue
			}
			src, dst := c[0]+c[1], c[2]+c[3]
			proto, sp, dp := "tcp", c[4], c[5]
			if sp == "" {
				proto, sp, dp = "udp", c[6], c[7]
			}
			xa, err1 := netip.ParseAddr(src)
			ya, err2 := netip.ParseAddr(dst)
			xp, err3 := strconv.ParseUint(sp, 10, 16)
			yp, err4 := strconv.ParseUint(dp, 10, 16)
			if err := errors.Join(err1, err2, err3, err4); err != nil {
				t.Fatalf("%s: tshark's line %q: %v", trace, line, err)
			}
			want[canonical(proto, netip.AddrPortFrom(xa, uint16(xp)), netip.AddrPortFrom(ya, uint16(yp)))]++
		}
		recs, s := replayFrags(t, path, true)
		if len(s.DecodeErrors) > 0 {
			// A packet tshark reads and flowmon's decoder refuses (a TCP
			// data offset below 5) is a question for the decoder.
			t.Logf("%s: left out, flowmon's decoder refused %v", trace, s.DecodeErrors)
			continue
		}
		got := map[tuple]int{}
		for _, r := range recs {
			if r.Proto == "tcp" || r.Proto == "udp" {
				got[canonical(r.Proto, netip.AddrPortFrom(r.OrigH, r.OrigP), netip.AddrPortFrom(r.RespH, r.RespP))] += int(r.OrigPkts + r.RespPkts)
			}
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: flowmon's TCP/UDP packets by 5-tuple %v, tshark's %v", trace, got, want)
		}
		if s.Defrag != nil {
			frags += s.Defrag.Fragments
		}
		compared++
		names = append(names, trace)
	}
	t.Logf("%d captures compared with tshark (%s), %d fragments reassembled", compared, strings.Join(names, " "), frags)
	if compared < 8 || frags == 0 {
		t.Errorf("%d captures compared, %d fragments taken: too few", compared, frags)
	}
}

// liveFiles reads files as a live source on no interface; it hands its
// fragments to a reassembler as the files do (capture.DefragSource).
type liveFiles struct {
	*capture.Files
	capture.NoIface
}

// TestLiveReassembles: a live pipeline gives each source a reassembler
// of its own (the feeder's goroutine reads it): a file read as a live
// source gives Zeek's connections of its fragmented DNS trace, and the
// live summary counts the fragments.
func TestLiveReassembles(t *testing.T) {
	dir := sharedpcaps.Dir(t)
	src, err := capture.OpenFiles(filepath.Join(dir, "zeek/ipv6-fragmented-dns.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var log bytes.Buffer
	cfg := liveConfig(acsm.BackendExact, &log)
	cfg.NoDedup = true
	pl, err := NewLivePipeline(cfg, []capture.LiveSource{liveFiles{Files: src}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := RunLive(context.Background(), pl, LiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recs := readJSONLines[connlog.Record](t, log.Bytes())
	var pkts []string
	for _, r := range recs {
		pkts = append(pkts, fmt.Sprintf("%d>%d %d/%d", r.OrigP, r.RespP, r.OrigPkts, r.RespPkts))
	}
	slices.Sort(pkts)
	if want := []string{"51850>53 1/1", "51851>53 2/1"}; !slices.Equal(pkts, want) {
		t.Errorf("records %v, Zeek's %v", pkts, want)
	}
	if d := s.Defrag; d == nil || d.Fragments != 4 || d.Datagrams != 1 {
		t.Errorf("summary's defrag %+v", d)
	}
}

// TestDefragMetrics: after a replay, /metrics says what reassembly
// took, dropped by reason and held, as the summary does: Zeek's trace of
// datagrams over 64 KiB has its fragments dropped as too large and, the
// rest of each never whole, at the timeout.
func TestDefragMetrics(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ACSM.Capacity, cfg.FlowCount.ExpectedFlows, cfg.MaxFlows = 4096, 4096, 4096
	cfg.Workers = 1
	pl, err := NewPipeline(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h, err := Handler(pl, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	s, err := Replay(context.Background(), []string{filepath.Join(sharedpcaps.Dir(t), overLarge)}, ReplayOptions{Pipeline: pl})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	d := s.Defrag
	if d == nil || d.Dropped["too_large"] == 0 || d.Datagrams != 0 {
		t.Fatalf("summary's defrag %+v", d)
	}
	value := func(name, reason string) uint64 {
		for _, m := range fams[name].GetMetric() {
			if reason == "" || (len(m.Label) == 1 && m.Label[0].GetValue() == reason) {
				if m.Counter != nil {
					return uint64(m.Counter.GetValue())
				}
				return uint64(m.Gauge.GetValue())
			}
		}
		t.Fatalf("no %s{reason=%q}", name, reason)
		return 0
	}
	if got := value("flowmon_capture_defrag_fragments_total", ""); got != d.Fragments {
		t.Errorf("fragments_total %d, summary %d", got, d.Fragments)
	}
	for _, r := range capture.DefragDrops() {
		if got := value("flowmon_capture_defrag_dropped_fragments_total", r.String()); got != d.Dropped[r.String()] {
			t.Errorf("dropped %s: %d, summary %d", r, got, d.Dropped[r.String()])
		}
	}
	if got := value("flowmon_capture_defrag_held_fragments", ""); got != d.Held {
		t.Errorf("held %d, summary %d", got, d.Held)
	}
}

// TestDefragMatchesSuricata: the suricata-verify tests of defrag that
// count flows by protocol alone (groundtruth/suricata_verify_flow_checks.tsv)
// count as many records of that protocol in the replay: the ICMP echo
// whose request came in fragments is one flow.
func TestDefragMatchesSuricata(t *testing.T) {
	dir := sharedpcaps.Dir(t)
	f, err := os.ReadFile(filepath.Join(dir, "groundtruth", "suricata_verify_flow_checks.tsv"))
	if err != nil {
		t.Skip(err)
	}
	checked := 0
	for line := range strings.Lines(string(f)) {
		c := strings.Split(strings.TrimSpace(line), "\t")
		if len(c) != 5 || !strings.Contains(c[0], "defrag") {
			continue
		}
		var m map[string]string
		if json.Unmarshal([]byte(c[4]), &m) != nil || len(m) != 2 || m["event_type"] != "flow" || m["proto"] == "" {
			continue
		}
		want, _ := strconv.Atoi(c[3])
		recs, _ := replayFrags(t, filepath.Join(dir, "suricata-verify", c[0], c[1]), true)
		got := 0
		for _, r := range recs {
			if strings.EqualFold(r.Proto, m["proto"]) {
				got++
			}
		}
		if got != want {
			t.Errorf("%s: %d %s records, Suricata %d flows", c[0], got, m["proto"], want)
		}
		checked++
	}
	if checked == 0 {
		t.Error("no suricata-verify defrag check compared")
	}
}
