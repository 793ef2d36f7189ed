package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReplayJSON(t *testing.T) {
	// The workers own the dedup of their flows: the counts are the same
	// on any number of them.
	for _, workers := range []string{"1", "2", "4"} {
		t.Run(workers+"-workers", func(t *testing.T) { testReplayJSON(t, workers) })
	}
}

func testReplayJSON(t *testing.T, workers string) {
	var out, errb bytes.Buffer
	if code := run([]string{"replay", "--json", "--workers", workers, "../../pcaps/sample.pcap"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var s map[string]any
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out.String())
	}
	for _, k := range []string{"packets", "bytes", "flows", "decode_errors", "packets_per_second"} {
		if _, ok := s[k]; !ok {
			t.Errorf("summary lacks %q", k)
		}
	}
	// The sample's truth sidecar has one line per flow; duplicates are
	// extra packets of the same flows.
	truth, err := os.ReadFile("../../pcaps/sample.truth.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	flows := strings.Count(string(truth), "\n")
	if got := s["flows"].(float64); int(got) != flows {
		t.Errorf("flows %v, truth has %d", got, flows)
	}
	if got := s["packets"].(float64); got != 3177+15 {
		t.Errorf("packets %v, the file holds 3192", got)
	}
	if got := s["duplicates"].(float64); got != 15 {
		t.Errorf("duplicates %v, the generator wrote 15", got)
	}
}

func TestReplayDamagedFileExitsNonZero(t *testing.T) {
	data, err := os.ReadFile("../../pcaps/sample.pcap")
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.pcap")
	os.WriteFile(cut, data[:len(data)/2+5], 0o644)
	var out, errb bytes.Buffer
	code := run([]string{"replay", "--json", cut}, &out, &errb)
	if code == 0 {
		t.Fatal("replay of a cut file exited 0")
	}
	var s map[string]any
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatalf("no summary printed: %v", err)
	}
	if s["packets"].(float64) < 1000 || !strings.Contains(errb.String(), "offset") {
		t.Errorf("want the packets before the damage and the offset; got %v packets, stderr %q", s["packets"], errb.String())
	}
}

func TestReplayStdinAndUsage(t *testing.T) {
	f, err := os.Open("../../pcaps/zeek-wikipedia.pcap")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = old }()
	var out, errb bytes.Buffer
	if code := run([]string{"replay", "--json", "-"}, &out, &errb); code != 0 {
		t.Fatalf("stdin: exit %d %s", code, errb.String())
	}
	if !strings.Contains(out.String(), `"packets":136`) {
		t.Errorf("stdin replay: %s", out.String())
	}
	if code := run([]string{"replay"}, &out, &errb); code != 2 {
		t.Errorf("replay without files: exit %d, want 2", code)
	}
	if code := run([]string{"nonsense"}, &out, &errb); code != 2 {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
}
