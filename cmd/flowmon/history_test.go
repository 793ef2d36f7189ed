package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flowmon/flowmon/gen"
)

// TestReplayHistoryHorizon: flowmon replay --history-horizon forgets by
// packet time: a trace replayed again over its history raises no novelty
// alert, and the same trace an hour later (its packets' times shifted
// past the horizon) raises them all again. --history-ram takes a size.
func TestReplayHistoryHorizon(t *testing.T) {
	dir := t.TempDir()
	traces := map[string]time.Time{"early.pcap": gen.DefaultStart, "late.pcap": gen.DefaultStart.Add(time.Hour)}
	for name, start := range traces {
		p := filepath.Join(dir, name)
		if _, err := genFiles(p, p+".truth", gen.Options{Flows: 300, Seed: 3, Duration: 2 * time.Second, Start: start}); err != nil {
			t.Fatal(err)
		}
	}
	rules := filepath.Join(dir, "rules.yaml")
	os.WriteFile(rules, []byte("groups:\n  - name: n\n    rules:\n      - {alert: NewPair, kind: novelty, track: by_pair, novelty: {}}\n"), 0o644)
	hist := filepath.Join(dir, "history")
	replay := func(trace string, extra ...string) (int, uint64, string) {
		var out, errb bytes.Buffer
		args := append([]string{"replay", "--json", "--rules", rules, "--history-dir", hist, "--history-horizon", "10m"}, extra...)
		code := run(append(args, filepath.Join(dir, trace)), &out, &errb)
		var s struct{ Alerts map[string]uint64 }
		json.Unmarshal(out.Bytes(), &s)
		return code, s.Alerts["NewPair"], errb.String()
	}
	var counts []uint64
	for _, trace := range []string{"early.pcap", "early.pcap", "late.pcap"} {
		code, n, errs := replay(trace, "--history-ram", "1MiB")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", trace, code, errs)
		}
		counts = append(counts, n)
	}
	if counts[0] == 0 || counts[1] != 0 || counts[2] < counts[0]*9/10 {
		t.Errorf("NewPair alerts: %v (want some, none, then as many again)", counts)
	}
	t.Logf("NewPair alerts: %v", counts)
	if gens, _ := filepath.Glob(filepath.Join(hist, "gen-*")); len(gens) != 1 {
		t.Errorf("generations left: %v (the early trace's are past the horizon)", gens)
	}
	if code, _, errs := replay("early.pcap", "--history-ram", "lots"); code != 2 {
		t.Errorf("--history-ram lots: exit %d: %s", code, errs)
	}
}
