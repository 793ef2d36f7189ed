//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/internal/testutil/netnstest"
)

// The live agent on a real kernel: each test makes its own network
// namespace with a veth pair (internal/testutil/netnstest, deleted when the test
// ends, failed or not), runs `flowmon run` on one end inside the
// namespace, and sends a flowmon gen trace into the other with tcpreplay,
// which keeps the trace's timing, so packet times, and with them every
// window and timeout, are the trace's up to the kernel's jitter.

// liveSummary is the part of the summary the live tests compare.
type liveSummary struct {
	Packets         uint64            `json:"packets"`
	Decoded         uint64            `json:"decoded_packets"`
	Flows           uint64            `json:"flows"`
	UniquePackets   uint64            `json:"unique_packets"`
	Duplicates      uint64            `json:"duplicates"`
	ConnStates      map[string]uint64 `json:"conn_states"`
	Workers         int               `json:"workers"`
	KernelPackets   *uint64           `json:"kernel_packets"`
	KernelDrops     *uint64           `json:"kernel_drops"`
	SnapshotFlows   *uint64           `json:"snapshot_flows"`
	RestoredFlows   *uint64           `json:"restored_flows"`
	SourceStops     *uint64           `json:"source_stops"`
	Interface       string            `json:"interface"`
	FlowsTimedOut   uint64            `json:"flows_timed_out"`
	Retransmissions uint64            `json:"retransmissions"`
	EBPF            *liveEBPF         `json:"ebpf"`
	Records         map[string]struct {
		Written uint64 `json:"written"`
		Failed  uint64 `json:"failed"`
		Dropped uint64 `json:"dropped"`
	} `json:"records"`
}

// liveEBPF is the summary's part for the eBPF program.
type liveEBPF struct {
	Attached    string `json:"attached"`
	SampleOneIn uint32 `json:"sample_one_in"`
	Seen        uint64 `json:"seen_packets"`
	Emitted     uint64 `json:"emitted_records"`
	Lost        uint64 `json:"lost_records"`
	SampledOut  uint64 `json:"sampled_out_packets"`
	FilteredOut uint64 `json:"filtered_out_packets"`
}

// liveNet is a namespace for the agent, with its loopback up for the
// agent's HTTP server.
func liveNet(t *testing.T) *netnstest.Net {
	t.Helper()
	n := netnstest.New(t)
	if out, err := n.Cmd("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("loopback up in %s: %v: %s", n.Name, err, out)
	}
	return n
}

// liveAgent is a flowmon run in a namespace.
type liveAgent struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr *lockedBuffer
	addr   string // its listen address, in the namespace
}

// startAgent starts flowmon run on the namespace's end B and returns
// once it says it captures.
func startAgent(t *testing.T, bin string, n *netnstest.Net, args ...string) *liveAgent {
	t.Helper()
	a := &liveAgent{stderr: &lockedBuffer{}, addr: "127.0.0.1:9100"}
	base := []string{"run", "--iface", n.B, "--json", "--listen", a.addr}
	if !slices.Contains(args, "--config") {
		base = append(base, "--rules", "none") // a config file says its own
	}
	args = append(base, args...)
	a.cmd = n.Cmd(bin, args...)
	a.cmd.Stdout = &a.stdout
	pr, pw := io.Pipe()
	a.cmd.Stderr = pw
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		ok := false
		for sc.Scan() {
			a.stderr.Write([]byte(sc.Text() + "\n"))
			if !ok && strings.Contains(sc.Text(), "capturing on") {
				ok = true
				started <- true
			}
		}
		if !ok {
			started <- false
		}
	}()
	t.Cleanup(func() {
		if a.cmd.ProcessState == nil {
			a.cmd.Process.Kill()
			a.cmd.Wait()
		}
		pw.Close()
	})
	select {
	case ok := <-started:
		if !ok {
			a.cmd.Wait()
			t.Fatalf("flowmon run did not start:\n%s", a.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("flowmon run did not say it captures within 30 s:\n%s", a.stderr)
	}
	return a
}

// stop sends SIGTERM and returns the summary flowmon printed.
func (a *liveAgent) stop(t *testing.T) liveSummary {
	t.Helper()
	// The agent runs under ip netns exec, which execs it: the process is
	// flowmon itself.
	if code, _ := stopStatus(t, a, 30*time.Second); code != 0 {
		t.Fatalf("flowmon run exited with %d:\n%s", code, a.stderr)
	}
	var s liveSummary
	if err := json.Unmarshal(a.stdout.Bytes(), &s); err != nil {
		t.Fatalf("summary: %v\n%s", err, a.stdout.String())
	}
	return s
}

// get asks the agent's HTTP server for path from inside the namespace.
func (a *liveAgent) get(t *testing.T, n *netnstest.Net, path string) (int, string) {
	t.Helper()
	code, body, err := a.tryGet(n, path)
	if err != nil {
		t.Fatal(err)
	}
	return code, body
}

// tryGet is get, its failure returned: the agent may be gone.
func (a *liveAgent) tryGet(n *netnstest.Net, path string) (int, string, error) {
	var conn net.Conn
	if err := n.Do(func() (err error) {
		conn, err = net.DialTimeout("tcp", a.addr, 5*time.Second)
		return err
	}); err != nil {
		return 0, "", err
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET %s HTTP/1.0\r\nHost: flowmon\r\n\r\n", path)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), nil
}

// replaySummary is flowmon replay --json of trace.
func replaySummary(t *testing.T, trace string, extra ...string) liveSummary {
	t.Helper()
	var out, errb bytes.Buffer
	args := append(append([]string{"replay", "--json", "--rules", "none"}, extra...), trace)
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("replay: exit %d: %s", code, errb.String())
	}
	var s liveSummary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func compareLive(t *testing.T, what string, got, want liveSummary) {
	t.Helper()
	if got.Packets != want.Packets || got.Decoded != want.Decoded || got.Flows != want.Flows ||
		got.UniquePackets != want.UniquePackets || got.Duplicates != want.Duplicates ||
		!maps.Equal(got.ConnStates, want.ConnStates) {
		t.Errorf("%s: packets %d decoded %d flows %d unique %d duplicates %d conn_states %v\n"+
			"replay: packets %d decoded %d flows %d unique %d duplicates %d conn_states %v", what,
			got.Packets, got.Decoded, got.Flows, got.UniquePackets, got.Duplicates, got.ConnStates,
			want.Packets, want.Decoded, want.Flows, want.UniquePackets, want.Duplicates, want.ConnStates)
	}
}

// TestRunMatchesReplay: flowmon run on one end of a veth pair, with one
// and two workers, sees what flowmon replay reads in the trace sent into
// the other end: packets, flows, conn_states, duplicates.
func TestRunMatchesReplay(t *testing.T) {
	testRunMatchesReplay(t, "afpacket", "1", "2")
}

// testRunMatchesReplay runs flowmon run on source with each number of
// workers over the same trace and compares each summary with replay's.
func testRunMatchesReplay(t *testing.T, source string, workerCounts ...string) {
	n := liveNet(t)
	bin := buildFlowmon(t, buildTags(source)...)
	trace := writeLiveTrace(t, 2000, 3, 11)
	want := replaySummary(t, trace)
	for _, workers := range workerCounts {
		t.Run("workers="+workers, func(t *testing.T) {
			a := startAgent(t, bin, n, "--source", source, "--workers", workers)
			if (source == "xdp" || source == "tc") && !strings.Contains(a.stderr.String(), source+" at ") {
				t.Errorf("flowmon run does not say where the program is attached:\n%s", a.stderr)
			}
			if code, body := a.get(t, n, "/-/ready"); code != http.StatusOK {
				t.Errorf("/-/ready: %d %q while capturing", code, body)
			}
			st, err := n.Tcpreplay(t, n.A, trace)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond) // the last blocks' timeout
			_, metrics := a.get(t, n, "/metrics")
			got := a.stop(t)
			t.Logf("sent %v; flowmon: %d packets, kernel %v packets %v drops", st, got.Packets, deref(got.KernelPackets), deref(got.KernelDrops))
			if got.KernelDrops == nil || *got.KernelDrops != 0 {
				t.Fatalf("kernel drops %v: the comparison needs every packet", deref(got.KernelDrops))
			}
			compareLive(t, "flowmon run --source "+source+" --workers "+workers, got, want)
			if got.Workers != len(workers) && fmt.Sprint(got.Workers) != workers {
				t.Errorf("summary workers %d, want %s", got.Workers, workers)
			}
			if !strings.Contains(metrics, "flowmon_capture_kernel_drops_total") {
				t.Errorf("/metrics has no flowmon_capture_kernel_drops_total")
			}
		})
	}
}

// buildTags are the build tags a source needs.
func buildTags(source string) []string {
	if source == "pcap" {
		return []string{"-tags", "pcap"}
	}
	return nil
}

func deref(p *uint64) any {
	if p == nil {
		return nil
	}
	return *p
}

// writeLiveTrace writes a gen trace for the live tests and returns its
// name.
func writeLiveTrace(t *testing.T, nflows, secs int, seed uint64) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "live.pcap")
	o := gen.Options{Flows: nflows, Seed: seed, Duration: time.Duration(secs) * time.Second}
	if _, err := genFiles(name, name+".truth", o); err != nil {
		t.Fatal(err)
	}
	return name
}

// splitTrace writes the first half of trace's packets to one file and
// the rest to another.
func splitTrace(t *testing.T, trace string) (string, string) {
	parts := splitTraceN(t, trace, 2)
	return parts[0], parts[1]
}

// splitTraceN writes trace's packets to n files, in order, each with
// about as many.
func splitTraceN(t *testing.T, trace string, n int) []string {
	t.Helper()
	f, err := os.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var all [][]byte
	var infos []pcapCI
	for {
		data, ci, err := r.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, data)
		infos = append(infos, pcapCI{ci.Timestamp, ci.Length})
	}
	dir := t.TempDir()
	names := make([]string, n)
	for k := range n {
		names[k] = filepath.Join(dir, fmt.Sprintf("part%d.pcap", k))
		out, err := os.Create(names[k])
		if err != nil {
			t.Fatal(err)
		}
		w := pcapgo.NewWriter(out)
		if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
			t.Fatal(err)
		}
		for i := k * len(all) / n; i < (k+1)*len(all)/n; i++ {
			if err := w.WritePacket(infos[i].captureInfo(len(all[i])), all[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// TestRunRestartKeepsFlows: flowmon run with a snapshot is stopped with
// SIGTERM after the first half of a trace and started again for the
// second: it says it restored the snapshot, and the flows that span the
// restart end with the conn_state, history and packet counts a replay of
// the whole trace gives them. The first run's log has a record for every
// flow it counts, those that ended just before the stop included, and
// its summary counts them.
func TestRunRestartKeepsFlows(t *testing.T) {
	n := liveNet(t)
	bin := buildFlowmon(t)
	trace := writeLiveTrace(t, 2000, 4, 12)
	first, second := splitTrace(t, trace)
	dir := t.TempDir()
	snap := filepath.Join(dir, "state.snap")
	var wantLog bytes.Buffer
	wantFile := filepath.Join(dir, "replay.log")
	ws := replaySummary(t, trace, "--flows-out", wantFile, "--workers", "2")
	if b, err := os.ReadFile(wantFile); err == nil {
		wantLog.Write(b)
	} else {
		t.Fatal(err)
	}
	logs := [2]string{filepath.Join(dir, "run1.log"), filepath.Join(dir, "run2.log")}
	var sums [2]liveSummary
	var secondStart time.Time
	for k, part := range [2]string{first, second} {
		secondStart = time.Now()
		a := startAgent(t, bin, n, "--workers", "2", "--snapshot", snap, "--flows-out", logs[k])
		if k == 1 && !strings.Contains(a.stderr.String(), "restored") {
			t.Errorf("the second run did not say it restored the snapshot:\n%s", a.stderr)
		}
		if _, err := n.Tcpreplay(t, n.A, part); err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			time.Sleep(300 * time.Millisecond)
		} else {
			// Past the records' linger: the ended flows are written
			// (an idle agent's clock goes on), the open ones carried.
			time.Sleep(5500 * time.Millisecond)
		}
		sums[k] = a.stop(t)
		t.Logf("run %d:\n%s", k+1, a.stderr)
		if b, err := os.ReadFile(logs[k]); err != nil {
			t.Fatal(err)
		} else if n, w := uint64(bytes.Count(b, []byte("\n"))), sums[k].Records["connlog"].Written; n != w || n != sums[k].Flows {
			t.Errorf("run %d: %d flows, %d records in its log, %d counted written", k+1, sums[k].Flows, n, w)
		}
		if d := sums[k].KernelDrops; d == nil || *d != 0 {
			t.Fatalf("run %d: kernel drops %v", k+1, deref(d))
		}
	}
	if sums[0].SnapshotFlows == nil || *sums[0].SnapshotFlows == 0 || sums[1].RestoredFlows == nil ||
		*sums[1].RestoredFlows != *sums[0].SnapshotFlows {
		t.Fatalf("saved %v open flows, restored %v", deref(sums[0].SnapshotFlows), deref(sums[1].RestoredFlows))
	}
	want := recordsByTuple(t, wantLog.Bytes(), time.Time{})
	got := map[string]flowOutcome{}
	// A flow that ended just before the first run's stop is written by it
	// without the packets that come after (the last ACK); the second run
	// counts those as a new flow on the 5-tuple, as Zeek's next connection.
	stragglers := map[string]flowOutcome{}
	for i, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		var started time.Time // a flow the second run ends that started before it spans the restart
		if i == 1 {
			started = secondStart
		}
		t.Logf("%s: %d records", filepath.Base(l), bytes.Count(b, []byte("\n")))
		for k, v := range recordsByTuple(t, b, started) {
			if g, dup := got[k]; dup {
				if w := want[k]; i == 0 || g.OrigPkts+g.RespPkts >= w.OrigPkts+w.RespPkts {
					t.Errorf("flow %s has a record in both runs", k)
				}
				stragglers[k] = v
				continue
			}
			got[k] = v
		}
	}
	// The conn_state and history must be the replay's, the packet counts
	// too, once a flow's stragglers are added. Every flow has a record
	// from one of the runs, or is open at the second's stop and carried to
	// its snapshot, as are the stragglers' flows not written by then.
	carried := *sums[1].SnapshotFlows
	spanning, differ, short := 0, 0, 0
	for k, g := range got {
		w, ok := want[k]
		if !ok {
			t.Errorf("flow %s: not in the replay", k)
			continue
		}
		if g.spans {
			spanning++
		}
		if g.State != w.State || g.History != w.History {
			differ++
			if differ <= 5 {
				t.Errorf("flow %s: two runs %+v, replay %+v", k, g, w)
			}
		}
		if g.OrigPkts != w.OrigPkts || g.RespPkts != w.RespPkts {
			short++
			s, written := stragglers[k]
			if !written {
				carried-- // its stragglers' flow is open at the second stop
			} else if g.OrigPkts+g.RespPkts+s.OrigPkts+s.RespPkts != w.OrigPkts+w.RespPkts {
				t.Errorf("flow %s: first run %+v, its stragglers %+v, replay %+v", k, g, s, w)
			}
		}
	}
	if uint64(len(got))+carried != uint64(len(want)) {
		t.Errorf("%d records from the two runs and %d flows carried at the end; the replay has %d", len(got), carried, len(want))
	}
	t.Logf("%d flows, %d spanning the restart, %d differ in state or history, %d written at the stop before their stragglers (%d of those written by the second run); packets %d+%d (replay %d), duplicates %d+%d (replay %d), retransmissions %d+%d (replay %d)",
		len(want), spanning, differ, short, len(stragglers), sums[0].Packets, sums[1].Packets, ws.Packets, sums[0].Duplicates, sums[1].Duplicates, ws.Duplicates,
		sums[0].Retransmissions, sums[1].Retransmissions, ws.Retransmissions)
	if spanning == 0 {
		t.Errorf("no flow spans the restart: the test does not test it")
	}
}

// flowOutcome is what the restart test compares of a flow's record.
type flowOutcome struct {
	State, History string
	OrigPkts       uint64
	RespPkts       uint64
	spans          bool
}

// recordsByTuple reads a flow log's records by 5-tuple; those of flows
// that started before started are marked as spanning it.
func recordsByTuple(t *testing.T, log []byte, started time.Time) map[string]flowOutcome {
	t.Helper()
	m := map[string]flowOutcome{}
	for _, l := range bytes.Split(bytes.TrimSpace(log), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var r struct {
			TS        float64 `json:"ts"`
			ConnState string  `json:"conn_state"`
			History   string  `json:"history"`
			OrigPkts  uint64  `json:"orig_pkts"`
			RespPkts  uint64  `json:"resp_pkts"`
		}
		var raw map[string]any
		if err := json.Unmarshal(l, &raw); err != nil {
			t.Fatal(err)
		}
		json.Unmarshal(l, &r)
		k := fmt.Sprintf("%v:%v-%v:%v/%v", raw["id.orig_h"], raw["id.orig_p"], raw["id.resp_h"], raw["id.resp_p"], raw["proto"])
		spans := !started.IsZero() && r.TS < float64(started.UnixNano())/1e9
		m[k] = flowOutcome{State: r.ConnState, History: r.History, OrigPkts: r.OrigPkts, RespPkts: r.RespPkts, spans: spans}
	}
	return m
}

// pcapCI is what splitTrace keeps of a record's capture info.
type pcapCI struct {
	ts     time.Time
	length int
}

func (c pcapCI) captureInfo(capLen int) gopacket.CaptureInfo {
	return gopacket.CaptureInfo{Timestamp: c.ts, CaptureLength: capLen, Length: c.length}
}

// TestRunFloodKeepsHeapFlat floods the agent with random-source SYNs
// faster than a deliberately small ring can hold: the heap stays flat
// from the first seconds of the flood to its end, and every packet the
// kernel saw is accounted for, either processed or counted as a kernel
// drop (none lost silently).
func TestRunFloodKeepsHeapFlat(t *testing.T) {
	n := liveNet(t)
	bin := buildFlowmon(t)
	// Six traces of 50,000 SYNs each from random sources, new ones in each.
	var traces []string
	for i := range 6 {
		trace := filepath.Join(t.TempDir(), fmt.Sprintf("flood%d.pcap", i))
		o := gen.Options{Flows: 50_000, Seed: 13 + uint64(i), Duration: time.Second, Mix: gen.Mix{SYNFlood: 1}}
		if _, err := genFiles(trace, trace+".truth", o); err != nil {
			t.Fatal(err)
		}
		traces = append(traces, trace)
	}
	cfg := filepath.Join(t.TempDir(), "flowmon.yaml")
	// Four blocks of 64 KiB: about 1,400 SYN frames in flight at most.
	if err := os.WriteFile(cfg, []byte("afpacket:\n  block-size: 64KiB\n  block-count: 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The default rules on: no stage, rules included, may grow.
	a := startAgent(t, bin, n, "--config", cfg, "--workers", "2", "--rules", "")
	heap := func() float64 {
		_, m := a.get(t, n, "/metrics")
		for _, l := range strings.Split(m, "\n") {
			if v, ok := strings.CutPrefix(l, "go_memstats_heap_inuse_bytes "); ok {
				var f float64
				fmt.Sscan(v, &f)
				return f
			}
		}
		t.Fatal("no go_memstats_heap_inuse_bytes in /metrics")
		return 0
	}
	var sent uint64
	var early float64
	for round, trace := range traces {
		st, err := n.Tcpreplay(t, n.A, trace, "--topspeed")
		if err != nil {
			t.Fatal(err)
		}
		sent += st.Packets
		if round == 0 {
			early = heap()
		}
	}
	time.Sleep(300 * time.Millisecond)
	late := heap()
	s := a.stop(t)
	t.Logf("sent %d SYNs; flowmon processed %d, kernel saw %v, dropped %v; heap in use %.1f MB after the first 50,000, %.1f MB at the end",
		sent, s.Packets, deref(s.KernelPackets), deref(s.KernelDrops), early/1e6, late/1e6)
	if late > early*1.25+4e6 {
		t.Errorf("the heap grew under the flood: %.1f MB to %.1f MB", early/1e6, late/1e6)
	}
	if s.KernelPackets == nil || s.KernelDrops == nil {
		t.Fatal("no kernel counts in the summary")
	}
	if *s.KernelPackets != sent || s.Packets+*s.KernelDrops != sent {
		t.Errorf("sent %d; kernel saw %d, flowmon processed %d and the kernel dropped %d: %d unaccounted for",
			sent, *s.KernelPackets, s.Packets, *s.KernelDrops, int64(sent)-int64(s.Packets+*s.KernelDrops))
	}
}

// TestRunDropsPrivileges: once its sockets are open, flowmon run keeps
// of its capabilities only CAP_NET_RAW, which an interface's reopening
// needs, in every thread's effective, permitted and bounding sets (none
// inheritable or ambient), started as root with or without --user; with
// --user nobody it runs as nobody. It captures as a replay reads.
func TestRunDropsPrivileges(t *testing.T) {
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody to drop to: %v", err)
	}
	n := liveNet(t)
	bin := buildFlowmon(t)
	trace := writeLiveTrace(t, 200, 1, 14)
	want := replaySummary(t, trace)
	for _, asUser := range []bool{false, true} {
		args := []string{"--workers", "2"}
		if asUser {
			args = append(args, "--user", "nobody")
		}
		a := startAgent(t, bin, n, args...)
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", a.cmd.Process.Pid))
		if err != nil || len(tasks) < 2 {
			t.Fatalf("threads of flowmon run: %v %v", tasks, err)
		}
		const netRaw = "0000000000002000" // 1 << CAP_NET_RAW
		for _, task := range tasks {
			status, err := os.ReadFile(task)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(string(status), "\n") {
				f := strings.Fields(l)
				switch {
				case len(f) == 5 && f[0] == "Uid:" && asUser && (f[1] != u.Uid || f[2] != u.Uid || f[3] != u.Uid):
					t.Errorf("%s after --user nobody (uid %s): %s", task, u.Uid, l)
				case len(f) == 2 && (f[0] == "CapEff:" || f[0] == "CapPrm:" || f[0] == "CapBnd:") && f[1] != netRaw,
					len(f) == 2 && (f[0] == "CapInh:" || f[0] == "CapAmb:") && f[1] != "0000000000000000":
					t.Errorf("%s (--user %v): %s", task, asUser, l)
				}
			}
		}
		if _, err := n.Tcpreplay(t, n.A, trace); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		compareLive(t, fmt.Sprintf("flowmon run (--user nobody: %v)", asUser), a.stop(t), want)
	}
}

// TestRunReloadsConfig: at SIGHUP the agent reads its config file again:
// a new rules path is loaded, a broken file or a change that needs a
// restart is reported and the running configuration stays.
func TestRunReloadsConfig(t *testing.T) {
	n := liveNet(t)
	bin := buildFlowmon(t)
	dir := t.TempDir()
	rules1, rules2 := filepath.Join(dir, "r1.yaml"), filepath.Join(dir, "r2.yaml")
	for _, f := range []string{rules1, rules2} {
		data, err := os.ReadFile("../../rules/default.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "flowmon.yaml")
	write := func(s string) {
		if err := os.WriteFile(cfg, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("rules: r1.yaml\n")
	a := startAgent(t, bin, n, "--config", cfg)
	hup := func(want string) {
		t.Helper()
		a.cmd.Process.Signal(syscall.SIGHUP)
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(a.stderr.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("after SIGHUP no %q in:\n%s", want, a.stderr)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	write("rules: r2.yaml\n")
	hup(`msg="rules reloaded" why="SIGHUP, the config's rules" file=` + rules2)
	write("rules: r2.yaml\npipeline:\n  workers: 7\n")
	hup("pipeline.workers changed: only a restart applies it")
	write("rules: [\n")
	hup("not reloaded, the running configuration stays")
	if s := a.stop(t); s.Interface != n.B {
		t.Errorf("summary interface %q", s.Interface)
	}
}
