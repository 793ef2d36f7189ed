package agent

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/pipeline"
)

// trace writes a small generated capture and returns its path.
func trace(t *testing.T) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "g.pcap")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.Generate(f, io.Discard, gen.Options{Flows: 300, Seed: 2, Duration: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestMetricsRegisterThemselves: the rules, the alerts, the watchlists
// and the flow history register their own metrics, beside the
// pipeline's, and every collector describes what it collects (a
// pedantic registry checks each metric against its description).
func TestMetricsRegisterThemselves(t *testing.T) {
	dir := t.TempDir()
	rulesFile := filepath.Join(dir, "rules.yaml")
	os.WriteFile(rulesFile, []byte(`groups:
  - name: g
    rules:
      - {alert: ToWatched, kind: watchlist, track: by_dst, watchlist: {list: servers, side: dst}}
      - {alert: NewPair, kind: novelty, track: by_pair, novelty: {}}
`), 0o644)
	listFile := filepath.Join(dir, "servers.txt")
	os.WriteFile(listFile, []byte("198.18.0.0/16\n"), 0o644)

	cfg := pipeline.DefaultConfig()
	cfg.Workers = 2
	al, err := newAlerting(rulesFile, "", "", io.Discard, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer al.close()
	lk, err := openLookups([]config.Watchlist{{Name: "servers", File: listFile}}, "",
		config.History{Dir: filepath.Join(dir, "history")}, al, &cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.close()
	al.attach(&cfg)
	pl, err := pipeline.NewPipeline(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	for _, register := range []func(prometheus.Registerer) error{pl.Register, al.register, lk.register} {
		if err := register(reg); err != nil {
			t.Fatal(err)
		}
	}
	s, err := pipeline.Replay(context.Background(), []string{trace(t)}, pipeline.ReplayOptions{Config: cfg, Pipeline: pl})
	if err != nil {
		t.Fatal(err)
	}
	al.count(s)
	if s.Alerts["ToWatched"] == 0 || s.Alerts["NewPair"] == 0 {
		t.Errorf("alerts: %v (want ToWatched and NewPair)", s.Alerts)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, mf := range mfs {
		seen[mf.GetName()] = true
	}
	for _, name := range []string{"flowmon_capture_packets_total", "flowmon_acsm_packets_total",
		"flowmon_dedup_packets_total", "flowmon_rules_loaded", "flowmon_rules_last_reload_successful",
		"flowmon_alerts_fired_total", "flowmon_alerts_sink_sent_total", "flowmon_watchlist_entries",
		"flowmon_history_novel_pairs_total"} {
		if !seen[name] {
			t.Errorf("no %s", name)
		}
	}
	if t.Failed() {
		var names []string
		for n := range seen {
			names = append(names, n)
		}
		t.Logf("exported: %s", strings.Join(names, " "))
	}
}

// TestReplayCountsAlerts: a replay's summary counts each rule's alerts
// (every rule has a key), with the rules a consumer like any other.
func TestReplayCountsAlerts(t *testing.T) {
	cfg := pipeline.DefaultConfig()
	r, err := OpenReplay(ReplayOptions{Pipeline: cfg, AlertsOut: filepath.Join(t.TempDir(), "alerts.json"),
		Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Run(context.Background(), []string{trace(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if len(s.Alerts) == 0 {
		t.Errorf("no alert key in the summary")
	}
}

// TestBuildInfo: the registry an agent and a replay use says which build
// answers: flowmon_build_info 1 with its version, revision and Go labels.
func TestBuildInfo(t *testing.T) {
	mfs, err := newRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "flowmon_build_info" {
			continue
		}
		m := mf.GetMetric()[0]
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if m.GetGauge().GetValue() != 1 || labels["goversion"] == "" || labels["version"] == "" || labels["revision"] == "" {
			t.Errorf("flowmon_build_info %v %v", m.GetGauge().GetValue(), labels)
		}
		return
	}
	t.Fatal("no flowmon_build_info")
}
