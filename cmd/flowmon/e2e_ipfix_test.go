package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/internal/testutil/sharedpcaps"
	"github.com/flowmon/flowmon/record/connlog"
)

// goflow2Version is the goflow2 the IPFIX test builds from the Go module
// proxy (it is not a dependency of flowmon's module).
const goflow2Version = "v2.2.6"

// ipfixRealCaptures are the real captures the IPFIX tests replay besides
// a generated trace: TCP, UDP, ICMP, IPv6, other IP protocols, and
// Ethernet, Linux SLL and raw IP links.
var ipfixRealCaptures = []string{
	"ndpi/1kxun.pcap",
	"ndpi/netflix.pcap",
	"ndpi/KakaoTalk_talk.pcap",
	"zeek/ftp/cwd-navigation.pcap",
	"suricata-verify/bug-4663-03/icmp_and_ssh.pcap",
	"zeek/ipv6-http-atomic-frag.pcap",
	"arkime/pim.pcap",
	"ndpi/ocs.pcap",
}

// ipfixTraces returns the traces the IPFIX tests replay: a generated
// one (flows flows over 30 s, IPv4 and IPv6, ICMP echo) and the real
// captures found.
func ipfixTraces(t *testing.T, bin string, flows int) []string {
	gen := filepath.Join(t.TempDir(), "gen.pcap")
	if out, err := exec.Command(bin, "gen", "-o", gen, "--flows", strconv.Itoa(flows), "--duration", "30s", "--seed", "7").CombinedOutput(); err != nil {
		t.Fatalf("flowmon gen: %v\n%s", err, out)
	}
	traces := []string{gen}
	dir := sharedpcaps.Dir(t)
	for _, c := range ipfixRealCaptures {
		if _, err := os.Stat(filepath.Join(dir, c)); err == nil {
			traces = append(traces, filepath.Join(dir, c))
		} else {
			t.Logf("%s: not found, not replayed", c)
		}
	}
	return traces
}

// exported is a record as a collector reads it, in the fields the tests
// compare: for ICMP the ports are the type and the code.
type exported struct {
	Proto            uint8
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16
	Pkts, Bytes      uint64
	RPkts, RBytes    uint64 // biflow: the responder's
}

func (e exported) String() string {
	return fmt.Sprintf("%d %s:%d > %s:%d %d pkts %d bytes, reverse %d pkts %d bytes", e.Proto, e.Src, e.SrcPort, e.Dst, e.DstPort, e.Pkts, e.Bytes, e.RPkts, e.RBytes)
}

var protoNumbers = map[string]uint8{"tcp": 6, "udp": 17, "icmp": 1}

// icmpPairs are the ICMP request and reply types flowmon keys as one flow
// (capture.icmpPorts): their records carry code 0.
var icmpPairs = map[[2]uint16]bool{{8, 0}: true, {10, 9}: true, {13, 14}: true, {15, 16}: true, {17, 18}: true,
	{128, 129}: true, {130, 131}: true, {133, 134}: true, {135, 136}: true}

func paired(a, b uint16) bool { return icmpPairs[[2]uint16{a, b}] || icmpPairs[[2]uint16{b, a}] }

// expectedRecords is what a collector should read for the conn.log
// records: one record a flow (biflow) or one a direction that sent
// packets (compat).
func expectedRecords(t *testing.T, connLog string, biflow bool) map[exported]int {
	t.Helper()
	f, err := os.Open(connLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[exported]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r connlog.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		proto := protoNumbers[r.Proto]
		if r.Proto == "icmp" && r.OrigH.Unmap().Is6() {
			proto = 58
		}
		if r.Proto == "unknown_transport" {
			proto = 0 // conn.log does not say: matched by the rest
		}
		e := exported{Proto: proto, Src: r.OrigH.Unmap(), Dst: r.RespH.Unmap(), SrcPort: r.OrigP, DstPort: r.RespP,
			Pkts: r.OrigPkts, Bytes: r.OrigIPBytes}
		rev := exported{Proto: proto, Src: e.Dst, Dst: e.Src, SrcPort: r.RespP, DstPort: r.OrigP, Pkts: r.RespPkts, Bytes: r.RespIPBytes}
		if r.Proto == "icmp" {
			if paired(r.OrigP, r.RespP) {
				e.DstPort, rev.SrcPort, rev.DstPort = 0, r.RespP, 0
			} else {
				rev.SrcPort, rev.DstPort = e.SrcPort, e.DstPort
			}
		}
		switch {
		case biflow:
			e.RPkts, e.RBytes = r.RespPkts, r.RespIPBytes
			want[e]++
		default:
			if r.OrigPkts > 0 || r.RespPkts == 0 {
				want[e]++
			}
			if r.RespPkts > 0 {
				want[rev]++
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return want
}

// compareRecords reports the records one side has more of than the
// other, and returns how many records matched.
func compareRecords(t *testing.T, name string, got, want map[exported]int) int {
	t.Helper()
	// conn.log does not name protocols other than TCP, UDP and ICMP:
	// their records match on the rest.
	for k, n := range got {
		if k.Proto == 6 || k.Proto == 17 || k.Proto == 1 || k.Proto == 58 {
			continue
		}
		k0 := k
		k0.Proto = 0
		delete(got, k)
		got[k0] += n
	}
	matched, diffs := 0, 0
	for k, n := range want {
		matched += min(n, got[k])
		if got[k] != n {
			diffs++
			if diffs <= 10 {
				t.Errorf("%s: %s: collector has %d, conn.log %d", name, k, got[k], n)
			}
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok {
			diffs++
			if diffs <= 10 {
				t.Errorf("%s: %s: collector has %d, conn.log none", name, k, n)
			}
		}
	}
	return matched
}

func freeUDPPort(t *testing.T) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().String()
}

// startCollector starts a collector and waits until its output says it
// listens (ready matches it); stop ends it with SIGTERM and waits.
func startCollector(t *testing.T, name string, args []string, ready *regexp.Regexp) (stop func()) {
	t.Helper()
	return startCollectorCmd(t, exec.Command(name, args...), ready)
}

// startCollectorCmd is startCollector of a command made (in a namespace:
// netnstest.Net.Cmd).
func startCollectorCmd(t *testing.T, cmd *exec.Cmd, ready *regexp.Regexp) (stop func()) {
	t.Helper()
	name := filepath.Base(cmd.Args[len(cmd.Args)-1])
	for _, a := range cmd.Args {
		if a == "nfcapd" || strings.HasSuffix(a, "goflow2") {
			name = filepath.Base(a)
		}
	}
	logPath := filepath.Join(t.TempDir(), name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(logPath)
		if ready.Match(b) {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("%s did not start:\n%s", name, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		logf.Close()
	}
	t.Cleanup(stop)
	return stop
}

// replayExport replays trace with export to collector and the flow log,
// and returns the flow log's path.
func replayExport(t *testing.T, bin, trace, collector string, flags ...string) string {
	t.Helper()
	connLog := filepath.Join(t.TempDir(), "conn.jsonl")
	args := append([]string{"replay", "--no-progress", "--rules", "none", "--flows-out", connLog, "--ipfix", collector}, flags...)
	out, err := exec.Command(bin, append(args, trace)...).CombinedOutput()
	if err != nil {
		t.Fatalf("flowmon %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return connLog
}

// TestE2EIPFIXNfdump replays a generated trace and real captures with
// IPFIX export to nfcapd (nfdump's collector) on loopback, in biflow mode
// (with enterprise elements, which nfcapd skips) and in compat mode, and
// checks that nfdump reads back the records of flowmon's own conn.log:
// flows, 5-tuples, packets and IP bytes (biflow: the reverse elements as
// nfdump's out_packets and out_bytes), with no sequence failure.
func TestE2EIPFIXNfdump(t *testing.T) {
	e2e(t, "nfcapd", "nfdump", "go")
	bin := buildFlowmon(t)
	total := 0
	for _, trace := range ipfixTraces(t, bin, 5000) {
		for _, mode := range []string{"biflow", "compat"} {
			name := filepath.Base(trace) + "/" + mode
			dir := t.TempDir()
			addr := freeUDPPort(t)
			host, port, _ := net.SplitHostPort(addr)
			stop := startCollector(t, "nfcapd", []string{"-w", dir, "-b", host, "-p", port, "-B", "8388608"},
				regexp.MustCompile(`Startup nfcapd`))
			flags := []string{"--ipfix-mode", mode}
			if mode == "biflow" {
				flags = append(flags, "--ipfix-enterprise", "32473") // RFC 5612's documentation PEN
			}
			connLog := replayExport(t, bin, trace, addr, flags...)
			stop() // nfcapd writes its file out at exit
			got, seqFailures := readNfdump(t, dir)
			if seqFailures != 0 {
				t.Errorf("%s: nfdump -E: %d sequence failures", name, seqFailures)
			}
			want := expectedRecords(t, connLog, mode == "biflow")
			n := compareRecords(t, name, got, want)
			t.Logf("%s: %d records compared", name, n)
			total += n
		}
	}
	t.Logf("%d records compared in all", total)
}

// readNfdump reads the records of nfcapd's files in dir (nfdump -o json)
// and the sequence failures nfdump -E reports for them.
func readNfdump(t *testing.T, dir string) (map[exported]int, int) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "nfcapd.*"))
	got := map[exported]int{}
	failures := 0
	seqRE := regexp.MustCompile(`Sequence failures: (\d+)`)
	for _, f := range files {
		if strings.HasSuffix(f, ".current") {
			t.Fatalf("%s: nfcapd left its current file", f)
		}
		out, err := exec.Command("nfdump", "-r", f, "-o", "json").Output()
		if err != nil {
			t.Fatalf("nfdump -r %s: %v", f, err)
		}
		var recs []struct {
			Proto      uint8      `json:"proto"`
			Src4       netip.Addr `json:"src4_addr"`
			Dst4       netip.Addr `json:"dst4_addr"`
			Src6       netip.Addr `json:"src6_addr"`
			Dst6       netip.Addr `json:"dst6_addr"`
			SrcPort    uint16     `json:"src_port"`
			DstPort    uint16     `json:"dst_port"`
			ICMPType   uint16     `json:"icmp_type"`
			ICMPCode   uint16     `json:"icmp_code"`
			InPackets  uint64     `json:"in_packets"`
			InBytes    uint64     `json:"in_bytes"`
			OutPackets uint64     `json:"out_packets"`
			OutBytes   uint64     `json:"out_bytes"`
		}
		// A file without records reads "[\nNo matching flows\n]".
		if text := strings.TrimSpace(string(out)); len(text) > 0 && !strings.Contains(text, "No matching flows") {
			if err := json.Unmarshal(out, &recs); err != nil {
				t.Fatalf("nfdump -o json: %v", err)
			}
		}
		for _, r := range recs {
			e := exported{Proto: r.Proto, Src: r.Src4, Dst: r.Dst4, SrcPort: r.SrcPort, DstPort: r.DstPort,
				Pkts: r.InPackets, Bytes: r.InBytes, RPkts: r.OutPackets, RBytes: r.OutBytes}
			if !e.Src.IsValid() {
				e.Src, e.Dst = r.Src6, r.Dst6
			}
			if r.Proto == 1 || r.Proto == 58 {
				e.SrcPort, e.DstPort = r.ICMPType, r.ICMPCode
			}
			got[e]++
		}
		ex, err := exec.Command("nfdump", "-E", f).CombinedOutput()
		if err != nil {
			t.Fatalf("nfdump -E %s: %v\n%s", f, err, ex)
		}
		m := seqRE.FindAllSubmatch(ex, -1)
		if m == nil && bytes.Contains(ex, []byte("No Exporter records found")) && len(recs) == 0 {
			continue // a file nfcapd rotated to with nothing sent in it yet
		}
		if m == nil {
			t.Fatalf("nfdump -E %s says no sequence failures count:\n%s", f, ex)
		}
		for _, s := range m {
			n, _ := strconv.Atoi(string(s[1]))
			failures += n
		}
	}
	if len(files) == 0 {
		t.Fatalf("nfcapd wrote no file in %s", dir)
	}
	return got, failures
}

// buildGoflow2 builds goflow2 at goflow2Version from the module proxy into
// a temp dir, skipping the test when it cannot be built (no network).
func buildGoflow2(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("FLOWMON_GOFLOW2"); p != "" {
		return p // a goflow2 built before, e.g. by make e2e
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "install", "github.com/netsampler/goflow2/v2/cmd/goflow2@"+goflow2Version)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-mod=mod")
	cmd.Dir = dir // outside flowmon's module: its go.mod is not touched
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("goflow2 %s could not be built from the module proxy: %v\n%s", goflow2Version, err, out)
	}
	return filepath.Join(dir, "goflow2")
}

// TestE2EIPFIXGoflow2 replays the same traces with IPFIX export in compat
// mode to goflow2 on loopback (goflow2 reads no reverse element) and
// checks that its JSON records equal flowmon's conn.log records: one a
// direction that sent packets, 5-tuples, packets and IP bytes, and no
// gap in the sequence numbers it reports.
func TestE2EIPFIXGoflow2(t *testing.T) {
	e2e(t, "go")
	bin := buildFlowmon(t)
	gf := buildGoflow2(t)
	total := 0
	// goflow2 has no setting of its socket's receive buffer, and decodes
	// more slowly than a replay sends: the kernel's default buffer
	// (net.core.rmem_default) drops what a larger trace sends at once,
	// and goflow2 sees the gap in the sequence numbers.
	for _, trace := range ipfixTraces(t, bin, 1000) {
		name := filepath.Base(trace)
		got, want, _ := goflow2Export(t, gf, bin, trace, 10*time.Second)
		n := compareRecords(t, name, got, want)
		t.Logf("%s: %d records compared", name, n)
		total += n
	}
	t.Logf("%d records compared in all", total)
}

// goflow2Export replays trace in compat mode to goflow2 (gf) on loopback
// and returns the records goflow2 wrote, waiting up to wait for all of
// them, and those conn.log says it should have, and their count.
func goflow2Export(t *testing.T, gf, bin, trace string, wait time.Duration) (got, want map[exported]int, records int) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "goflow2.json")
	addr := freeUDPPort(t)
	stop := startCollector(t, gf, []string{"-listen", "netflow://" + addr + "?workers=1", "-addr", "127.0.0.1:0",
		"-format", "json", "-transport", "file", "-transport.file", out},
		regexp.MustCompile(`starting collection`))
	connLog := replayExport(t, bin, trace, addr, "--ipfix-mode", "compat")
	want = expectedRecords(t, connLog, false)
	for _, n := range want {
		records += n
	}
	// goflow2 writes records as it decodes them: wait for all of them.
	deadline := time.Now().Add(wait)
	for countRecords(out) < records && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	return readGoflow2(t, out), want, records
}

func countRecords(path string) int {
	b, _ := os.ReadFile(path)
	return strings.Count(string(b), `{"type":`)
}

// goflow2Protos are goflow2's names of the IP protocols the traces hold.
var goflow2Protos = map[string]uint8{"ICMP": 1, "TCP": 6, "UDP": 17, "IPv6-ICMP": 58, "GRE": 47, "ESP": 50, "OSPF": 89, "PIM": 103, "SCTP": 132, "IGMP": 2, "IPv6": 41}

// readGoflow2 reads goflow2's JSON lines, checking that the sequence
// numbers it reports (the message's: the records before it) cover every
// record without a gap.
func readGoflow2(t *testing.T, path string) map[exported]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[exported]int{}
	seqs := map[uint32]int{} // message sequence number -> records
	// A stream of objects rather than lines: goflow2's file transport
	// can lose the newline between two records it writes at once.
	dec := json.NewDecoder(f)
	for dec.More() {
		var r struct {
			Type     string     `json:"type"`
			Seq      uint32     `json:"sequence_num"`
			Proto    string     `json:"proto"`
			Src      netip.Addr `json:"src_addr"`
			Dst      netip.Addr `json:"dst_addr"`
			SrcPort  uint16     `json:"src_port"`
			DstPort  uint16     `json:"dst_port"`
			ICMPType uint16     `json:"icmp_type"`
			ICMPCode uint16     `json:"icmp_code"`
			Packets  uint64     `json:"packets"`
			Bytes    uint64     `json:"bytes"`
		}
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("goflow2 output: %v", err)
		}
		proto, ok := goflow2Protos[r.Proto]
		if !ok {
			n, err := strconv.Atoi(r.Proto)
			if err != nil {
				t.Fatalf("goflow2 protocol %q: add it to goflow2Protos", r.Proto)
			}
			proto = uint8(n)
		}
		e := exported{Proto: proto, Src: r.Src.Unmap(), Dst: r.Dst.Unmap(), SrcPort: r.SrcPort, DstPort: r.DstPort, Pkts: r.Packets, Bytes: r.Bytes}
		if proto == 1 || proto == 58 {
			e.SrcPort, e.DstPort = r.ICMPType, r.ICMPCode
		}
		got[e]++
		seqs[r.Seq]++
	}
	// Each message's sequence number is the previous one's plus its
	// records.
	keys := make([]uint32, 0, len(seqs))
	for s := range seqs {
		keys = append(keys, s)
	}
	slices.Sort(keys)
	for i := 1; i < len(keys); i++ {
		if keys[i] != keys[i-1]+uint32(seqs[keys[i-1]]) {
			t.Errorf("%s: goflow2 saw sequence %d after %d with %d records: a gap", path, keys[i], keys[i-1], seqs[keys[i-1]])
			break
		}
	}
	return got
}

// pacedFlows is the generated trace's flows in the paced tests: enough
// that an unpaced replay overflows nfcapd's and goflow2's default socket
// buffers many times over.
const pacedFlows = 200_000

// TestE2EIPFIXPaced replays a trace of pacedFlows flows to nfcapd with no
// -B (its default socket buffer) and to goflow2 (which has no such
// setting), at the default rate: every record arrives, with no sequence
// failure.
func TestE2EIPFIXPaced(t *testing.T) {
	e2e(t, "nfcapd", "nfdump", "go")
	bin := buildFlowmon(t)
	trace := ipfixTraces(t, bin, pacedFlows)[0]

	dir := t.TempDir()
	addr := freeUDPPort(t)
	host, port, _ := net.SplitHostPort(addr)
	stop := startCollector(t, "nfcapd", []string{"-w", dir, "-b", host, "-p", port}, regexp.MustCompile(`Startup nfcapd`))
	connLog := replayExport(t, bin, trace, addr)
	stop()
	got, seqFailures := readNfdump(t, dir)
	want := expectedRecords(t, connLog, true)
	n := compareRecords(t, "nfcapd", got, want)
	if seqFailures != 0 {
		t.Errorf("nfcapd: %d sequence failures", seqFailures)
	}
	t.Logf("nfcapd: %d of %d records, %d sequence failures", n, len(want), seqFailures)

	gf := buildGoflow2(t)
	gfGot, gfWant, records := goflow2Export(t, gf, bin, trace, 30*time.Second)
	n = compareRecords(t, "goflow2", gfGot, gfWant)
	t.Logf("goflow2: %d of %d records", n, records)
}

// TestE2EIPFIXDownReplay replays to a UDP collector whose port is closed:
// the replay exits 3 and its summary counts the records lost.
func TestE2EIPFIXDownReplay(t *testing.T) {
	e2e(t, "go")
	bin := buildFlowmon(t)
	trace := ipfixTraces(t, bin, 500)[0]
	addr := freeUDPPort(t)
	cmd := exec.Command(bin, "replay", "--no-progress", "--rules", "none", "--json", "--ipfix", addr, trace)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("replay to a collector down: %v, want exit status 3\n%s", err, stderr.String())
	}
	var s struct {
		Records map[string]struct{ Written, Failed, Dropped uint64 } `json:"records"`
	}
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("summary: %v\n%s", err, out)
	}
	r := s.Records["ipfix"]
	if r.Failed+r.Dropped == 0 || !strings.Contains(stderr.String(), addr) {
		t.Fatalf("summary's ipfix records %+v, stderr:\n%s\nwant records lost, the collector named", r, stderr.String())
	}
}
