package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/flowmon/flowmon/pipeline"
)

// TestReplayFilterAsTcpdump: flowmon replay --filter PROG FILE gives the
// summary and the flow records of a replay of what tcpdump -r FILE -w OUT
// EXPR keeps, and counts the frames left out.
func TestReplayFilterAsTcpdump(t *testing.T) {
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Skip("tcpdump is not installed")
	}
	dir := t.TempDir()
	for _, expr := range []string{"tcp", "udp or icmp", "port 80 and host 192.168.3.131"} {
		prog, err := exec.Command("tcpdump", "-r", sample, "-ddd", expr).Output()
		if err != nil {
			t.Fatalf("tcpdump -ddd %q: %v", expr, err)
		}
		kept := filepath.Join(dir, "kept.pcap")
		if out, err := exec.Command("tcpdump", "-r", sample, "-w", kept, expr).CombinedOutput(); err != nil {
			t.Fatalf("tcpdump -w %q: %v: %s", expr, err, out)
		}
		filtered, flowsA := replayWith(t, dir, "--filter", strings.TrimSpace(string(prog)), sample)
		want, flowsB := replayWith(t, dir, kept)
		all, _ := replayWith(t, dir, sample)
		if filtered.Packets != want.Packets || filtered.Flows != want.Flows || !reflect.DeepEqual(filtered.ConnStates, want.ConnStates) {
			t.Errorf("%q: --filter gave %d packets, %d flows, %v; tcpdump's output %d, %d, %v", expr,
				filtered.Packets, filtered.Flows, filtered.ConnStates, want.Packets, want.Flows, want.ConnStates)
		}
		if filtered.Filtered+filtered.Packets != all.Packets || want.Filtered != 0 {
			t.Errorf("%q: %d kept and %d filtered of %d frames", expr, filtered.Packets, filtered.Filtered, all.Packets)
		}
		if !bytes.Equal(flowsA, flowsB) {
			t.Errorf("%q: the flow records differ from those of tcpdump's output", expr)
		}
		t.Logf("%q: %d of %d frames kept, %d flows", expr, filtered.Packets, all.Packets, filtered.Flows)
	}
}

// replayWith replays with args and returns the summary and the records.
func replayWith(t *testing.T, dir string, args ...string) (pipeline.Summary, []byte) {
	t.Helper()
	flows := filepath.Join(dir, "flows.jsonl")
	var out, errb bytes.Buffer
	if code := run(append([]string{"replay", "--json", "--rules", "none", "--flows-out", flows}, args...), &out, &errb); code != 0 {
		t.Fatalf("replay %v: exit %d: %s", args, code, errb.String())
	}
	var s pipeline.Summary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(flows)
	if err != nil {
		t.Fatal(err)
	}
	return s, b
}

// TestRunFilterFlag: run's --filter is the source's filter, and the eBPF
// sources, which take none, refuse it.
func TestRunFilterFlag(t *testing.T) {
	const prog = "4,40 0 0 12,21 0 1 2048,6 0 0 262144,6 0 0 0"
	for source, key := range map[string]string{"afpacket": "afpacket", "pcap": "pcap", "xdp": "", "tc": ""} {
		f, err := parseRunFlags([]string{"--iface", "lo", "--source", source, "--filter", prog}, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := loadRunConfig(f)
		switch {
		case key == "" && (err == nil || !strings.Contains(err.Error(), "--filter")):
			t.Errorf("%s: %v, want --filter refused", source, err)
		case key == "afpacket" && (err != nil || c.AFPacket.Filter != prog):
			t.Errorf("%s: filter %q, %v", source, c.AFPacket.Filter, err)
		case key == "pcap" && (err != nil || c.Pcap.Filter != prog):
			t.Errorf("%s: filter %q, %v", source, c.Pcap.Filter, err)
		}
	}
}
