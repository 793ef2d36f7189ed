package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/flowmon/flowmon/internal/testutil/testgate"
)

// e2e gates the tests that start real programs: they are long
// (internal/testutil/testgate) and run under make e2e, which installs what they
// need first.
func e2e(t *testing.T, tools ...string) {
	t.Helper()
	testgate.Long(t)
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (scripts/install-deps.sh e2e installs it): %v", tool, err)
		}
	}
}

// buildFlowmon builds the command (go build flags, e.g. -tags pcap) into
// the test's temp dir.
func buildFlowmon(t *testing.T, flags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "flowmon")
	args := append(append([]string{"build"}, flags...), "-o", bin, ".")
	cmd := exec.Command("go", args...)
	if !slices.Contains(flags, "pcap") { // libpcap's build needs cgo
		// As make build: a cgo build cannot drop every thread's capabilities.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestE2EPrometheusScrapesReplay runs flowmon replay --listen --linger on
// the sample trace and a real Prometheus scraping it, then asks
// Prometheus's query API for the packet count flowmon reported.
func TestE2EPrometheusScrapesReplay(t *testing.T) {
	e2e(t, "prometheus", "promtool", "go")
	bin := buildFlowmon(t)
	addr := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	fm := exec.CommandContext(ctx, bin, "replay", "--json", "--listen", addr, "--linger", "../../pcaps/sample.pcap")
	stdout, _ := fm.StdoutPipe()
	fm.Stderr = os.Stderr
	if err := fm.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { fm.Process.Signal(os.Interrupt); fm.Wait() }()
	var summary struct{ Packets uint64 }
	if err := json.NewDecoder(stdout).Decode(&summary); err != nil {
		t.Fatalf("replay summary: %v", err)
	}

	// promtool's linter on what flowmon exposes.
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	lint := exec.CommandContext(ctx, "promtool", "check", "metrics")
	lint.Stdin = resp.Body
	if out, err := lint.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
	resp.Body.Close()

	dir := t.TempDir()
	promAddr := freePort(t)
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: flowmon\n    static_configs:\n      - targets: [%q]\n", addr)
	os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644)
	prom := exec.CommandContext(ctx, "prometheus", "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+promAddr)
	promLog, _ := os.Create(filepath.Join(dir, "prometheus.log"))
	prom.Stdout, prom.Stderr = promLog, promLog
	if err := prom.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { prom.Process.Signal(os.Interrupt); prom.Wait() }()

	q := "sum(flowmon_capture_packets_total)"
	var got float64
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(time.Second)
		v, err := promQuery(promAddr, q)
		if err != nil {
			continue
		}
		if got = v; got == float64(summary.Packets) {
			break
		}
	}
	if got != float64(summary.Packets) {
		log, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
		t.Fatalf("Prometheus has %s = %v, flowmon read %d packets\n%s", q, got, summary.Packets, log)
	}
	// The target is up and the ACSM's own metrics arrived too.
	if v, err := promQuery(promAddr, `up{job="flowmon"}`); err != nil || v != 1 {
		t.Errorf("up = %v, %v", v, err)
	}
	if v, err := promQuery(promAddr, "sum(flowmon_acsm_flows_total)"); err != nil || v != 300 {
		t.Errorf("flowmon_acsm_flows_total = %v (%v), want the sample's 300 flows", v, err)
	}
}

// promQuery runs an instant query and returns its single value.
func promQuery(addr, q string) (float64, error) {
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string
		Data   struct {
			Result []struct {
				Value [2]any
			}
		}
	}
	if err := json.NewDecoder(bufio.NewReader(resp.Body)).Decode(&r); err != nil {
		return 0, err
	}
	if r.Status != "success" || len(r.Data.Result) != 1 {
		return 0, fmt.Errorf("query %q: status %s, %d results", q, r.Status, len(r.Data.Result))
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	return strconv.ParseFloat(s, 64)
}
