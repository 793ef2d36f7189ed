package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowmon/flowmon/internal/testutil/tmpfstest"
)

// waitHealth polls the agent's /healthz until it answers code with a body
// holding want, or fails the test after a while.
func waitHealth(t *testing.T, a *liveAgent, get func(string) (int, string), code int, want string) string {
	t.Helper()
	return waitHealthWithin(t, a, get, code, want, 20*time.Second)
}

// waitHealthWithin is waitHealth with its bound.
func waitHealthWithin(t *testing.T, a *liveAgent, get func(string) (int, string), code int, want string, bound time.Duration) string {
	t.Helper()
	var last string
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		c, body := get("/healthz")
		if c == code && strings.Contains(body, want) {
			return body
		}
		last = body
	}
	t.Fatalf("/healthz never answered %d with %q; last: %q\n%s", code, want, last, a.stderr)
	return ""
}

// stopStatus sends SIGTERM and returns the exit status and how long the
// stop took; a stop past bound fails the test.
func stopStatus(t *testing.T, a *liveAgent, bound time.Duration) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, time.Since(start)
		case errors.As(err, &ee):
			return ee.ExitCode(), time.Since(start)
		}
		t.Fatal(err)
	case <-time.After(bound):
		a.cmd.Process.Kill()
		t.Fatalf("flowmon run did not stop within %v of SIGTERM:\n%s", bound, a.stderr)
	}
	return 0, 0
}

// TestRunAlertmanagerDownAtStop: alerts fire while the Alertmanager the
// config names is down. /healthz names the failing sink while the agent
// runs; a SIGTERM then stops it within its stop timeout (the sink, failing
// already, gets a second), the log names the sink and what it left
// undelivered, and the exit status is 3: the state saved, an output's
// loss named. While it stops, /-/ready answers 503 (it drains and saves,
// no longer capturing) until the port closes.
func TestRunAlertmanagerDownAtStop(t *testing.T) {
	n := liveNet(t)
	bin := buildFlowmon(t)
	dir := t.TempDir()
	trace := filepath.Join(dir, "alerts.pcap")
	if out, err := exec.Command(bin, "gen", "-o", trace, "--flows", "3000", "--duration", "3s",
		"--mix", "normal=0.9,synflood=0.05,scan=0.05", "--seed", "3").CombinedOutput(); err != nil {
		t.Fatalf("flowmon gen: %v\n%s", err, out)
	}
	// Nothing listens on the namespace's port 9: connection refused.
	writeFile(t, filepath.Join(dir, "alerting.yaml"),
		"sinks:\n  - name: am\n    type: alertmanager\n    urls: [\"http://127.0.0.1:9\"]\n    resend_interval: 1s\n")
	writeFile(t, filepath.Join(dir, "flowmon.yaml"), "alerting: alerting.yaml\nsnapshot: {path: state.snap}\nstop-timeout: 8s\n")
	a := startAgent(t, bin, n, "--config", filepath.Join(dir, "flowmon.yaml"))
	if _, err := n.Tcpreplay(t, n.A, trace); err != nil {
		t.Fatal(err)
	}
	get := func(p string) (int, string) { return a.get(t, n, p) }
	waitHealth(t, a, get, 503, "alerts:am:http://127.0.0.1:9 failing since")
	if c, _ := get("/-/ready"); c != 200 {
		t.Fatalf("/-/ready %d while capturing", c)
	}
	readyWhileStopping := make(chan []int, 1)
	go func() {
		var codes []int
		for {
			c, _, err := a.tryGet(n, "/-/ready")
			if err != nil {
				break // the port closed
			}
			if len(codes) == 0 || codes[len(codes)-1] != c {
				codes = append(codes, c)
			}
			time.Sleep(20 * time.Millisecond)
		}
		readyWhileStopping <- codes
	}()
	code, took := stopStatus(t, a, 20*time.Second)
	if codes := <-readyWhileStopping; !slices.Contains(codes, 503) {
		t.Errorf("/-/ready while stopping answered %v, never 503", codes)
	}
	stderr := a.stderr.String()
	t.Logf("stopped in %v with exit %d", took.Round(time.Millisecond), code)
	if code != 3 || took > 8*time.Second {
		t.Errorf("exit %d after %v; want 3 within the stop timeout (8s):\n%s", code, took, stderr)
	}
	if !strings.Contains(stderr, "closing alert sink am:http://127.0.0.1:9") || !strings.Contains(stderr, "undelivered") {
		t.Errorf("the stop does not name the sink and what it left:\n%s", stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "state.snap")); err != nil {
		t.Errorf("the state was not saved: %v", err)
	}
}

// TestRunFlowLogDiskFull: the flow log's file system fills. The agent
// says so when it starts (the log names the sink), /healthz and
// flowmon_component_up{component="records:connlog"} say so while it lasts, the file keeps only
// whole records; once there is room again the records go on, which is
// logged too, and the stop exits 3 with the records lost counted in the
// summary.
func TestRunFlowLogDiskFull(t *testing.T) {
	n := liveNet(t)
	bin := buildFlowmon(t)
	dir := tmpfstest.New(t, 64<<10)
	trace := writeLiveTrace(t, 3000, 2, 17)
	flowLog := filepath.Join(dir, "flows.jsonl")
	a := startAgent(t, bin, n, "--workers", "2", "--flows-out", flowLog)
	if _, err := n.Tcpreplay(t, n.A, trace); err != nil {
		t.Fatal(err)
	}
	get := func(p string) (int, string) { return a.get(t, n, p) }
	waitHealth(t, a, get, 503, "records:connlog failing since")
	// The disk may take a smaller batch meanwhile (the sink up again):
	// the failure is counted whatever the gauge says now.
	if _, body := get("/metrics"); sumMetric(body, `flowmon_component_failures_total{component="records:connlog"}`) == 0 {
		t.Errorf(`flowmon_component_failures_total{component="records:connlog"} is 0 after the disk filled`)
	}
	tmpfstest.Resize(t, dir, 16<<20)
	if _, err := n.Tcpreplay(t, n.A, writeLiveTrace(t, 300, 1, 18)); err != nil {
		t.Fatal(err)
	}
	waitHealth(t, a, get, 200, "ok")
	code, _ := stopStatus(t, a, 30*time.Second)
	stderr := a.stderr.String()
	// A disk with a little room left takes a smaller batch after failing
	// a larger one: each failure is logged when it starts and ends.
	if starts := strings.Count(stderr, `msg="component failing" component=records:connlog`); starts == 0 ||
		starts != strings.Count(stderr, `msg="component recovered" component=records:connlog`) {
		t.Errorf("the failure is not logged once when it starts and once when it ends:\n%s", stderr)
	}
	var s liveSummary
	if err := json.Unmarshal(a.stdout.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if code != 3 || s.Records["connlog"].Failed == 0 || s.Records["connlog"].Written == 0 {
		t.Errorf("exit %d, records %+v; want 3, some written and some lost", code, s.Records)
	}
	b, err := os.ReadFile(flowLog)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	lines := 0
	for sc.Scan() {
		lines++
		if !json.Valid(sc.Bytes()) {
			t.Fatalf("line %d of the flow log is not a whole record: %q", lines, sc.Text())
		}
	}
	if uint64(lines) != s.Records["connlog"].Written {
		t.Errorf("%d lines in the flow log, the summary says %d written", lines, s.Records["connlog"].Written)
	}
	t.Logf("%d records written, %d lost to the full disk", s.Records["connlog"].Written, s.Records["connlog"].Failed)
}
