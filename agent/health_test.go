package agent

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/record"
	"github.com/flowmon/flowmon/record/ipfix"
)

// failing is a record sink whose every call fails, as a full disk's.
type failing struct{}

func (failing) WriteFlows([]record.Flow) error { return errors.New("no space left on device") }
func (failing) Flush() error                   { return nil }

// TestHealthzSaysASinkFails: /healthz answers 503 naming the flow record
// sink that is failing, where /-/ready still answers 200 (capture runs).
func TestHealthzSaysASinkFails(t *testing.T) {
	for _, broken := range []bool{false, true} {
		cfg := pipeline.DefaultConfig()
		cfg.Workers = 1
		if broken {
			cfg.Sinks = []record.Named{{Name: "connlog", Sink: failing{}}}
		}
		srv := replayServed(t, cfg, newRegistry())
		get := httpGetter(t, srv)
		code, body := get("/healthz")
		switch {
		case broken && (code != http.StatusServiceUnavailable || !strings.Contains(body, "flow record sink connlog failing")):
			t.Errorf("a failing sink: /healthz %d %q", code, body)
		case !broken && code != http.StatusOK:
			t.Errorf("healthy: /healthz %d %q", code, body)
		}
		if code, body := get("/-/ready"); code != http.StatusOK {
			t.Errorf("/-/ready %d %q", code, body)
		}
		srv.close()
	}
}

// TestReloadMetrics: a reload at SIGHUP that fails sets
// flowmon_config_last_reload_successful to 0 and counts a failure; one
// that takes sets it back to 1.
func TestReloadMetrics(t *testing.T) {
	r := newReloads()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r)
	value := func(name string) float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name {
				m := mf.GetMetric()[0]
				if g := m.GetGauge(); g != nil {
					return g.GetValue()
				}
				return m.GetCounter().GetValue()
			}
		}
		t.Fatalf("no %s", name)
		return 0
	}
	fail := true
	reload := r.wrap(func() error {
		if fail {
			return errors.New("config.yaml:3:1: unknown key")
		}
		return nil
	})
	if reload() == nil || value("flowmon_config_last_reload_successful") != 0 || value("flowmon_config_reload_failures_total") != 1 {
		t.Errorf("after a failed reload: %v, %v", value("flowmon_config_last_reload_successful"), value("flowmon_config_reload_failures_total"))
	}
	fail = false
	if reload() != nil || value("flowmon_config_last_reload_successful") != 1 || value("flowmon_config_last_reload_success_timestamp_seconds") <= 0 {
		t.Errorf("after a reload that took: %v", value("flowmon_config_last_reload_successful"))
	}
}

// TestHealthzSaysAnAlertSinkFails: /healthz answers 503 naming an alert
// sink while its deliveries fail (a webhook answering 500), and 200 again
// once they arrive; flowmon_alerts_sink_failing says the same.
func TestHealthzSaysAnAlertSinkFails(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if down.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
		}
	}))
	defer hook.Close()
	dir := t.TempDir()
	alerting := filepath.Join(dir, "alerting.yaml")
	yaml := "sinks:\n  - {name: hook, type: webhook, url: " + hook.URL + ", min_backoff: 5ms, max_backoff: 20ms}\n"
	if err := os.WriteFile(alerting, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	al, err := newAlerting("", "", alerting, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer al.close()
	cfg := pipeline.DefaultConfig()
	cfg.Workers = 1
	lk, err := openLookups(nil, "", config.History{}, nil, &cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := pipeline.NewPipeline(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serveMetrics("127.0.0.1:0", config.Web{}, newRegistry(), pl, al, lk, nil, func() bool { return true }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.close()
	get := httpGetter(t, srv)
	var sink alerts.Sink
	for _, s := range al.eng.Manager().Sinks() {
		if s.Name() == "hook" {
			sink = s
		}
	}
	sink.Send(alerts.Alert{Labels: alerts.Labels{{Name: "alertname", Value: "Test"}}, StartsAt: time.Now()})
	waitUntil(t, "the sink failing", func() bool { return sink.Stats().Failing != nil })
	if code, body := get("/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "alert sink hook failing") {
		t.Errorf("a failing alert sink: /healthz %d %q", code, body)
	}
	if _, body := get("/metrics"); !strings.Contains(body, `flowmon_alerts_sink_failing{sink="hook"} 1`) {
		t.Errorf("/metrics has no flowmon_alerts_sink_failing 1 for hook")
	}
	down.Store(false)
	waitUntil(t, "the alert delivered", func() bool { return sink.Stats().Sent == 1 })
	if code, body := get("/healthz"); code != http.StatusOK {
		t.Errorf("the alert sink delivers again: /healthz %d %q", code, body)
	}
	if _, body := get("/metrics"); !strings.Contains(body, `flowmon_alerts_sink_failing{sink="hook"} 0`) {
		t.Errorf("/metrics has no flowmon_alerts_sink_failing 0 for hook")
	}
}

// waitUntil polls cond until it holds, failing the test after 30 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestHealthzSaysAnIPFIXCollectorFails: with its IPFIX collector down,
// /healthz answers 503 naming the collector by its address, and
// flowmon_records_sink_failing says the ipfix sink fails.
func TestHealthzSaysAnIPFIXCollectorFails(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := pipeline.DefaultConfig()
	cfg.Workers = 1
	reg := newRegistry()
	closeIPFIX, err := openIPFIX(&ipfix.Options{Collectors: []string{addr}, Transport: ipfix.TransportTCP}, reg, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer closeIPFIX()
	time.Sleep(100 * time.Millisecond) // the first dial fails
	srv := replayServed(t, cfg, reg)
	defer srv.close()
	get := httpGetter(t, srv)
	if code, body := get("/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "flow record sink ipfix failing") ||
		!strings.Contains(body, addr) {
		t.Errorf("an IPFIX collector down: /healthz %d %q, want 503 naming %s", code, body, addr)
	}
	_, body := get("/metrics")
	for _, want := range []string{`flowmon_records_sink_failing{sink="ipfix"} 1`, `flowmon_ipfix_collector_up{collector="` + addr + `"} 0`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
}

// httpGetter returns a function that GETs a path of srv and returns the
// status and the body.
func httpGetter(t *testing.T, srv *metricsServer) func(path string) (int, string) {
	return func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + srv.addr.String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
}

// replayServed replays pcaps/sample.pcap through a pipeline of cfg and
// serves its metrics and health from reg.
func replayServed(t *testing.T, cfg pipeline.Config, reg *prometheus.Registry) *metricsServer {
	t.Helper()
	lk, err := openLookups(nil, "", config.History{}, nil, &cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := pipeline.NewPipeline(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pipeline.Replay(context.Background(), []string{"../pcaps/sample.pcap"}, pipeline.ReplayOptions{Pipeline: pl})
	srv, err := serveMetrics("127.0.0.1:0", config.Web{}, reg, pl, nil, lk, nil, func() bool { return true }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}
