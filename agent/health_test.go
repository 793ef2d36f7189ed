package agent

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/record"
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
		lk, err := openLookups(nil, "", config.History{}, nil, &cfg, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		pl, err := pipeline.NewPipeline(cfg)
		if err != nil {
			t.Fatal(err)
		}
		pipeline.Replay(context.Background(), []string{"../pcaps/sample.pcap"}, pipeline.ReplayOptions{Pipeline: pl})
		srv, err := serveMetrics("127.0.0.1:0", config.Web{}, newRegistry(), pl, nil, lk, nil, func() bool { return true }, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		get := func(path string) (int, string) {
			resp, err := http.Get("http://" + srv.addr.String() + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
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
