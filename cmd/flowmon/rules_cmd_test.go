package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowmon/flowmon/internal/testutil/bpftest"
)

// TestRulesCheck: every testdata file of the rules package gives the
// parser's messages, each with file:line:col, and exit 1; good files exit
// 0 with a one-line summary each.
func TestRulesCheck(t *testing.T) {
	good, _ := filepath.Glob("../../rules/testdata/*.good.yaml")
	good = append(good, "../../rules/default.yaml")
	var out, errb bytes.Buffer
	if code := run(append([]string{"rules", "check"}, good...), &out, &errb); code != 0 {
		t.Fatalf("good files: exit %d: %s", code, errb.String())
	}
	if n := strings.Count(out.String(), "valid\n"); n != len(good) {
		t.Errorf("%d summary lines for %d files:\n%s", n, len(good), out.String())
	}
	bad, _ := filepath.Glob("../../rules/testdata/*.bad.yaml")
	for _, f := range bad {
		out.Reset()
		errb.Reset()
		if code := run([]string{"rules", "check", f}, &out, &errb); code != 1 {
			t.Errorf("%s: exit %d, want 1", f, code)
		}
		want, err := os.ReadFile(f + ".golden")
		if err != nil {
			t.Fatal(err)
		}
		// The golden files name the file as the rules package's tests
		// open it (testdata/...); here it is opened from cmd/flowmon.
		wantText := strings.ReplaceAll(string(want), "testdata/", "../../rules/testdata/")
		if !strings.HasPrefix(errb.String(), wantText) {
			t.Errorf("%s: stderr\n%s\nwant it to start with\n%s", f, errb.String(), wantText)
		}
	}
	out.Reset()
	if code := run([]string{"rules", "show"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "alert: SYNFlood") {
		t.Errorf("rules show: exit %d, %q", code, out.String())
	}
}

// TestReplayAlerts: the default rules run in every replay; the summary
// counts alerts by rule, --alerts-out writes them as JSON lines, and
// --rules none turns them off.
func TestReplayAlerts(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "scan.pcap")
	var out, errb bytes.Buffer
	if code := run([]string{"gen", "-o", trace, "--flows", "3000", "--mix", "normal=0.6,scan=0.4", "--seed", "5"}, &out, &errb); code != 0 {
		t.Fatalf("gen: %s", errb.String())
	}
	alertsFile := filepath.Join(dir, "alerts.jsonl")
	out.Reset()
	errb.Reset()
	if code := run([]string{"replay", "--json", "--workers", "2", "--alerts-out", alertsFile, trace}, &out, &errb); code != 0 {
		t.Fatalf("replay: exit %d: %s", code, errb.String())
	}
	var s struct {
		Alerts           map[string]uint64
		AlertsSuppressed *uint64 `json:"alerts_suppressed"`
	}
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if s.Alerts["PortScan"] == 0 || s.AlertsSuppressed == nil {
		t.Fatalf("summary alerts %v, suppressed %v: want PortScan", s.Alerts, s.AlertsSuppressed)
	}
	lines := 0
	f, _ := os.Open(alertsFile)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var a struct {
			Status string
			Labels map[string]string
		}
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			t.Fatalf("alert line %q: %v", sc.Text(), err)
		}
		if a.Status == "firing" {
			lines++
		}
	}
	var total uint64
	for _, n := range s.Alerts {
		total += n
	}
	if uint64(lines) != total {
		t.Errorf("%d firing lines in --alerts-out, the summary counts %d", lines, total)
	}
	// The text summary says which rules fired; the alerts go to stderr.
	out.Reset()
	errb.Reset()
	if code := run([]string{"replay", trace}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "\nalerts           PortScan=") || !strings.Contains(errb.String(), " FIRING PortScan ") {
		t.Errorf("text summary: exit %d\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run([]string{"replay", "--json", "--rules", "none", trace}, &out, &errb); code != 0 || strings.Contains(out.String(), `"alerts":{`) {
		t.Errorf("--rules none: exit %d, %s", code, out.String())
	}
}

// TestReplayReloadKeepsOldRules runs a replay that lingers with --listen
// and posts /-/reload: a broken rules file is refused with its positions
// and the old rules stay (flowmon_rules_last_reload_successful 0); a good
// one is taken.
func TestReplayReloadKeepsOldRules(t *testing.T) {
	bin := buildFlowmon(t)
	dir := t.TempDir()
	rulesFile := filepath.Join(dir, "rules.yaml")
	good, _ := os.ReadFile("../../rules/default.yaml")
	os.WriteFile(rulesFile, good, 0o644)
	addr := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "replay", "--no-progress", "--rules", rulesFile, "--listen", addr, "--web.enable-lifecycle", "--linger", "../../pcaps/sample.pcap")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "serving until interrupted") })

	os.WriteFile(rulesFile, []byte("groups:\n  - name: g\n    rules:\n      - alert: X\n        kind: nope\n"), 0o644)
	code, body := post(t, "http://"+addr+"/-/reload")
	if code != http.StatusBadRequest || !strings.Contains(body, "rules.yaml:5:15: rule \"X\": unknown kind \"nope\"") {
		t.Errorf("reload of a bad file: %d %q", code, body)
	}
	m := metrics(t, addr)
	if !strings.Contains(m, "flowmon_rules_last_reload_successful 0") || !strings.Contains(m, "flowmon_rules_loaded 6") {
		t.Errorf("after a bad reload, metrics lack the failure or lost the rules:\n%s", grepLines(m, "flowmon_rules_"))
	}
	os.WriteFile(rulesFile, []byte("groups:\n  - name: g\n    rules:\n      - alert: X\n        kind: anomaly\n        anomaly: [xmas]\n"), 0o644)
	if code, body := post(t, "http://"+addr+"/-/reload"); code != http.StatusOK {
		t.Errorf("reload of a good file: %d %q", code, body)
	}
	m = metrics(t, addr)
	if !strings.Contains(m, "flowmon_rules_last_reload_successful 1") || !strings.Contains(m, "flowmon_rules_loaded 1") {
		t.Errorf("after a good reload:\n%s", grepLines(m, "flowmon_rules_"))
	}

	// A change of the file is noticed (checked every second) ...
	two := "groups:\n  - name: g\n    rules:\n      - alert: X\n        kind: anomaly\n        anomaly: [xmas]\n      - alert: Y\n        kind: anomaly\n        anomaly: [\"null\"]\n"
	os.WriteFile(rulesFile, []byte(two), 0o644)
	waitFor(t, func() bool { return strings.Contains(metrics(t, addr), "flowmon_rules_loaded 2") })
	// ... and SIGHUP reloads it; a broken file is refused, the two rules stay.
	os.WriteFile(rulesFile, []byte("groups: [\n"), 0o644)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		return strings.Contains(stderr.String(), `msg="rules not reloaded, the old ones stay" why=SIGHUP`)
	})
	m = metrics(t, addr)
	if !strings.Contains(m, "flowmon_rules_last_reload_successful 0") || !strings.Contains(m, "flowmon_rules_loaded 2") {
		t.Errorf("after SIGHUP with a broken file:\n%s\nstderr:\n%s", grepLines(m, "flowmon_rules_"), stderr.String())
	}
}

func post(t *testing.T, url string) (int, string) {
	resp, err := http.Post(url, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func metrics(t *testing.T, addr string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDefaultRulesTestsKernelState runs the default rules' shipped tests
// with the flows kept in the kernel (default.kernel.rulestest.yaml: the
// same traces), where the rules see flow events and the kernel's counts:
// the same alerts, but one more heavy hitter, which sample and hold misses
// on packets.
func TestDefaultRulesTestsKernelState(t *testing.T) {
	if testing.Short() {
		t.Skip("generates five traces")
	}
	bpftest.Require(t)
	var out, errb bytes.Buffer
	if code := run([]string{"rules", "test", "../../rules/testdata/default.kernel.rulestest.yaml"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errb.String())
	}
	if n := strings.Count(out.String(), "ok   "); n != 5 {
		t.Errorf("%d tests passed, want 5:\n%s", n, out.String())
	}
}

// TestDefaultRulesTests runs the default rules' shipped tests (one
// flowmon gen trace per scenario, and benign traffic), and shows that a
// wrong expectation fails with the difference.
func TestDefaultRulesTests(t *testing.T) {
	if testing.Short() {
		t.Skip("generates five traces")
	}
	var out, errb bytes.Buffer
	if code := run([]string{"rules", "test", "../../rules/testdata/default.rulestest.yaml"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errb.String())
	}
	if n := strings.Count(out.String(), "ok   "); n != 5 {
		t.Errorf("%d tests passed, want 5:\n%s", n, out.String())
	}
	wrong := filepath.Join(t.TempDir(), "wrong.yaml")
	os.WriteFile(wrong, []byte(`rule_files: [default]
tests:
  - name: expects the wrong thing
    pcap: `+mustAbs(t, "../../pcaps/sample.pcap")+`
    alerts:
      - {alertname: SYNFlood, labels: {dst: 192.0.2.1}}
`), 0o644)
	out.Reset()
	if code := run([]string{"rules", "test", wrong}, &out, &errb); code != 1 ||
		!strings.Contains(out.String(), "SYNFlood dst=192.0.2.1: 0 fired, want 1") {
		t.Errorf("wrong expectation: exit %d\n%s", code, out.String())
	}
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
