//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/flowmon/flowmon/internal/testutil/bpftest"
	"github.com/flowmon/flowmon/internal/testutil/sharedpcaps"
)

// liveKernelState is the summary's kernel_state.
type liveKernelState struct {
	Frames      uint64 `json:"frames"`
	Datagrams   uint64 `json:"datagrams"`
	Counted     uint64 `json:"packets_counted"`
	ToUser      uint64 `json:"frames_to_user"`
	Flows       uint64 `json:"flows"`
	Records     uint64 `json:"records"`
	EventsLost  uint64 `json:"events_lost"`
	RecordsLost uint64 `json:"records_lost"`
}

// TestRunKernelStateMatchesReplay: flowmon run with pipeline.flow-state
// kernel, its programs at XDP and at TC, with one and two workers, on
// one end of a veth pair, writes the flow log that flowmon replay
// --flow-state kernel writes of the trace sent into the other end:
// every flow's record, paired by 5-tuple and order, agrees in every
// field but its times and uid (the live clock's).
func TestRunKernelStateMatchesReplay(t *testing.T) {
	bpftest.Require(t)
	n := liveNet(t)
	bin := buildFlowmon(t)
	trace := writeLiveTrace(t, 2000, 3, 11)
	wantLog := filepath.Join(t.TempDir(), "replay.jsonl")
	want := replaySummary(t, trace, "--flow-state", "kernel", "--flows-out", wantLog)
	wantRecs := readFlowRecords(t, wantLog)
	for _, source := range []string{"xdp", "tc"} {
		for _, workers := range []string{"1", "2"} {
			t.Run(source+"/workers="+workers, func(t *testing.T) {
				dir := t.TempDir()
				cfg := filepath.Join(dir, "flowmon.yaml")
				body := "source: " + source + "\npipeline:\n  flow-state: kernel\n"
				if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
				log := filepath.Join(dir, "flows.jsonl")
				a := startAgent(t, bin, n, "--config", cfg, "--rules", "none", "--workers", workers, "--flows-out", log)
				if !strings.Contains(a.stderr.String(), source+" at ") {
					t.Errorf("flowmon run does not say where the program is attached:\n%s", a.stderr)
				}
				st, err := n.Tcpreplay(t, n.A, trace)
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(300 * time.Millisecond)
				_, metrics := a.get(t, n, "/metrics")
				var got struct {
					liveSummary
					KernelState *liveKernelState `json:"kernel_state"`
				}
				a.stopInto(t, &got)
				if got.KernelState == nil {
					t.Fatalf("the summary has no kernel_state:\n%s", a.stdout.String())
				}
				k := got.KernelState
				t.Logf("sent %v; flowmon: %d packets read in user space, kernel state %+v", st, got.Packets, *k)
				if k.Frames != st.Packets || k.EventsLost != 0 || k.RecordsLost != 0 {
					t.Errorf("the kernel state saw %d frames of %d sent, lost %d events, %d records", k.Frames, st.Packets, k.EventsLost, k.RecordsLost)
				}
				if got.Flows != want.Flows || !maps.Equal(got.ConnStates, want.ConnStates) {
					t.Errorf("flows %d conn_states %v; replay: flows %d conn_states %v", got.Flows, got.ConnStates, want.Flows, want.ConnStates)
				}
				for _, m := range []string{"flowmon_kernel_state_cells ", "flowmon_kernel_state_events_lost_total ", "flowmon_kernel_state_insert_failures_total "} {
					if !strings.Contains(metrics, m) {
						t.Errorf("/metrics has no %s", m)
					}
				}
				agree, diffs := compareFlowRecords(wantRecs, readFlowRecords(t, log))
				for _, d := range diffs {
					t.Log(d)
				}
				t.Logf("%d of %d flows agree", agree, len(wantRecs))
				if len(diffs) > 0 {
					t.Errorf("%d differences in %d flows", len(diffs), len(wantRecs))
				}
			})
		}
	}
}

// TestRunKernelStateTunnels: the frames the kernel flow state leaves to
// user space (GTP-U and Geneve tunnels, IPv4 fragments) go up whole and
// are decoded there; flowmon run at XDP writes the flow log that
// flowmon replay --flow-state kernel writes of the same captures.
func TestRunKernelStateTunnels(t *testing.T) {
	bpftest.Require(t)
	var files []string
	for _, c := range sharedpcaps.Captures(t) {
		switch c.Name {
		case "arkime/gtp-u.pcap", "arkime/tcpdump-geneve.pcap", "suricata-verify/exception-policy-defrag-01/ipv4frags.pcap":
			files = append(files, c.Path)
		}
	}
	if len(files) != 3 {
		t.Skipf("the shared captures hold %d of the 3 this test sends", len(files))
	}
	n := liveNet(t)
	bin := buildFlowmon(t)
	dir := t.TempDir()
	var wantRecs []flowRecord
	for i, f := range files {
		log := filepath.Join(dir, fmt.Sprintf("replay%d.jsonl", i))
		replaySummary(t, f, "--flow-state", "kernel", "--flows-out", log)
		wantRecs = append(wantRecs, readFlowRecords(t, log)...)
	}
	cfg := filepath.Join(dir, "flowmon.yaml")
	if err := os.WriteFile(cfg, []byte("source: xdp\npipeline:\n  flow-state: kernel\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "flows.jsonl")
	a := startAgent(t, bin, n, "--config", cfg, "--rules", "none", "--workers", "1", "--flows-out", log)
	var sent uint64
	for _, f := range files {
		st, err := n.Tcpreplay(t, n.A, f)
		if err != nil {
			t.Fatal(err)
		}
		sent += st.Packets
	}
	time.Sleep(300 * time.Millisecond)
	var got struct {
		liveSummary
		KernelState *liveKernelState `json:"kernel_state"`
	}
	a.stopInto(t, &got)
	if got.KernelState == nil || got.EBPF == nil {
		t.Fatalf("the summary has no kernel_state or ebpf part:\n%s", a.stdout.String())
	}
	k := got.KernelState
	t.Logf("sent %d; flowmon: %d packets read in user space, ebpf %+v, kernel state %+v", sent, got.Packets, *got.EBPF, *k)
	// Every frame is the cells' or goes up whole (tunnels, fragments,
	// and what the kernel's parser leaves, malformed to it); the datagrams
	// reassembled from fragments come back into the cells.
	if k.ToUser == 0 || k.Datagrams == 0 || k.Frames != sent+k.Datagrams || k.Counted+got.EBPF.Emitted != sent+k.Datagrams ||
		got.EBPF.Lost != 0 || got.Packets != got.EBPF.Emitted {
		t.Errorf("sent %d: the kernel state saw %d (%d datagrams), counted %d, left %d to user space, handed up %d, lost %d; user space read %d",
			sent, k.Frames, k.Datagrams, k.Counted, k.ToUser, got.EBPF.Emitted, got.EBPF.Lost, got.Packets)
	}
	// A flow whose first packet is a fragmented datagram may be oriented
	// from its answer live: the datagram comes back into the cells after
	// user space reassembles it, and the answer, whole, may be there
	// first. Such a record is the replay's with the roles swapped.
	gotRecs := readFlowRecords(t, log)
	agree, diffs := compareFlowRecords(wantRecs, gotRecs)
	flipped := 0
	if len(diffs) > 0 {
		var rest []flowRecord
		swapped := map[string]bool{}
		for _, r := range gotRecs {
			swapped[r.swapped] = true
		}
		for _, r := range wantRecs {
			if swapped[r.fields] {
				flipped++
				t.Logf("%s: oriented from its answer live", r.tuple)
				continue
			}
			rest = append(rest, r)
		}
		if uint64(flipped) <= k.Datagrams {
			var live []flowRecord
			for _, r := range gotRecs {
				if !slices.ContainsFunc(wantRecs, func(w flowRecord) bool { return w.fields == r.swapped }) {
					live = append(live, r)
				}
			}
			agree, diffs = compareFlowRecords(rest, live)
		}
	}
	for _, d := range diffs {
		t.Log(d)
	}
	t.Logf("%d of %d flows agree, %d more with the roles swapped", agree, len(wantRecs), flipped)
	if len(diffs) > 0 {
		t.Errorf("%d differences in %d flows", len(diffs), len(wantRecs))
	}
}

// stopInto is stop, the summary read into s.
func (a *liveAgent) stopInto(t *testing.T, s any) {
	t.Helper()
	if code, _ := stopStatus(t, a, 30*time.Second); code != 0 {
		t.Fatalf("flowmon run exited with %d:\n%s", code, a.stderr)
	}
	if err := json.Unmarshal(a.stdout.Bytes(), s); err != nil {
		t.Fatalf("summary: %v\n%s", err, a.stdout.String())
	}
}

// flowRecord is a flow log's record: its 5-tuple, its start time, and
// every field but the times and the uid, spelled.
type flowRecord struct {
	tuple  string
	ts     float64
	fields string
	// swapped is fields with the roles of originator and responder
	// swapped (their addresses, ports, counts and history letters).
	swapped string
}

func readFlowRecords(t *testing.T, name string) []flowRecord {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var out []flowRecord
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatal(err)
		}
		r := flowRecord{tuple: fmt.Sprintf("%v:%v-%v:%v/%v", m["id.orig_h"], m["id.orig_p"], m["id.resp_h"], m["id.resp_p"], m["proto"])}
		r.ts, _ = m["ts"].(float64)
		for _, k := range []string{"ts", "duration", "uid"} {
			delete(m, k)
		}
		if tp, ok := m["tunnel_parents"].([]any); ok {
			m["tunnel_parents"] = len(tp) // uids, of the parents' first packet times
		}
		r.fields = recordFields(m)
		sw := map[string]any{}
		for k, v := range m {
			switch {
			case strings.Contains(k, "orig"):
				k = strings.Replace(k, "orig", "resp", 1)
			case strings.Contains(k, "resp"):
				k = strings.Replace(k, "resp", "orig", 1)
			}
			sw[k] = v
		}
		if h, ok := m["history"].(string); ok {
			sw["history"] = strings.Map(func(c rune) rune {
				if unicode.IsUpper(c) {
					return unicode.ToLower(c)
				}
				return unicode.ToUpper(c)
			}, h)
		}
		r.swapped = recordFields(sw)
		out = append(out, r)
	}
	return out
}

// recordFields is a record's fields, sorted, as one string.
func recordFields(m map[string]any) string {
	var sb strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&sb, "%s=%v ", k, m[k])
	}
	return sb.String()
}

// compareFlowRecords pairs the records by 5-tuple and order of start
// and says how each pair differs.
func compareFlowRecords(want, got []flowRecord) (agree int, diffs []string) {
	group := func(rs []flowRecord) map[string][]flowRecord {
		m := map[string][]flowRecord{}
		for _, r := range rs {
			m[r.tuple] = append(m[r.tuple], r)
		}
		for _, l := range m {
			sort.SliceStable(l, func(i, j int) bool { return l[i].ts < l[j].ts })
		}
		return m
	}
	w, g := group(want), group(got)
	for _, tuple := range slices.Sorted(maps.Keys(w)) {
		wl, gl := w[tuple], g[tuple]
		for i, r := range wl {
			switch {
			case i >= len(gl):
				diffs = append(diffs, fmt.Sprintf("%s: no live record: replay %s", tuple, r.fields))
			case gl[i].fields != r.fields:
				diffs = append(diffs, fmt.Sprintf("%s: replay %s\n\tlive   %s", tuple, r.fields, gl[i].fields))
			default:
				agree++
			}
		}
		for i := len(wl); i < len(gl); i++ {
			diffs = append(diffs, fmt.Sprintf("%s: only live: %s", tuple, gl[i].fields))
		}
	}
	for _, tuple := range slices.Sorted(maps.Keys(g)) {
		if w[tuple] == nil {
			for _, r := range g[tuple] {
				diffs = append(diffs, fmt.Sprintf("%s: only live: %s", tuple, r.fields))
			}
		}
	}
	return agree, diffs
}
