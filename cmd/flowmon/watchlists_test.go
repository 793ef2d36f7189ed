package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/gen"
)

// TestReplayWatchlistRule: flowmon replay --watchlist servers=FILE with a
// watchlist rule raises an alert per listed destination the trace's
// flows reach, and none for a list that holds none of them; a rule
// naming a list not given stops the replay with the rule's position.
func TestReplayWatchlistRule(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "g.pcap")
	if _, err := genFiles(trace, trace+".truth", gen.Options{Flows: 300, Seed: 2, Duration: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(dir, "rules.yaml")
	os.WriteFile(rules, []byte(`groups:
  - name: w
    rules:
      - alert: ToWatched
        kind: watchlist
        track: by_dst
        watchlist: {list: servers, side: dst}
`), 0o644)
	run1 := func(list string) (map[string]uint64, string, int) {
		lf := filepath.Join(dir, "servers.txt")
		os.WriteFile(lf, []byte(list), 0o644)
		var out, errb bytes.Buffer
		code := run([]string{"replay", "--json", "--rules", rules, "--watchlist", "servers=" + lf, trace}, &out, &errb)
		var s struct{ Alerts map[string]uint64 }
		if code == 0 {
			json.Unmarshal(out.Bytes(), &s)
		}
		return s.Alerts, errb.String(), code
	}
	alerts, stderr, code := run1("# the generator's servers\n198.18.0.0/16\n")
	if code != 0 || alerts["ToWatched"] == 0 {
		t.Fatalf("listed servers: exit %d, alerts %v\n%s", code, alerts, stderr)
	}
	alerts, _, code = run1("192.0.2.0/24\n")
	if code != 0 || alerts["ToWatched"] != 0 {
		t.Errorf("an unrelated list: exit %d, alerts %v", code, alerts)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"replay", "--rules", rules, trace}, &out, &errb); code == 0 || !strings.Contains(errb.String(), `rule "ToWatched": no watchlist "servers"`) {
		t.Errorf("no --watchlist: exit %d: %s", code, errb.String())
	}
}

// TestReplayHistoryNovelty: flowmon replay --history-dir with a novelty
// rule alerts on the trace's host pairs the first time, and on none when
// the same trace is replayed again over the same history.
func TestReplayHistoryNovelty(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "g.pcap")
	if _, err := genFiles(trace, trace+".truth", gen.Options{Flows: 300, Seed: 3, Duration: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(dir, "rules.yaml")
	os.WriteFile(rules, []byte("groups:\n  - name: n\n    rules:\n      - {alert: NewPair, kind: novelty, track: by_pair, novelty: {}}\n"), 0o644)
	hist := filepath.Join(dir, "history")
	var counts []uint64
	for range 2 {
		var out, errb bytes.Buffer
		if code := run([]string{"replay", "--json", "--rules", rules, "--history-dir", hist, trace}, &out, &errb); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		var s struct{ Alerts map[string]uint64 }
		json.Unmarshal(out.Bytes(), &s)
		counts = append(counts, s.Alerts["NewPair"])
	}
	if counts[0] == 0 || counts[1] != 0 {
		t.Errorf("NewPair alerts: %d the first time, %d the second (want some, then none)", counts[0], counts[1])
	}
}
