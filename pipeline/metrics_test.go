package pipeline

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/flowmon/flowmon/capture"
)

// finalWindowFlows counts, exactly, the distinct flows of the packets of
// file in the window of length w holding its last packet (windows aligned
// as flowcount aligns them). Dedup is left out: a duplicate is a copy of
// a packet of a flow the window has anyway.
func finalWindowFlows(t *testing.T, file string, w time.Duration) int {
	t.Helper()
	r, err := capture.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	type pkt struct {
		hash uint64
		ts   time.Time
	}
	var pkts []pkt
	var last time.Time
	var p capture.Packet
	for {
		if err := r.Next(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkts = append(pkts, pkt{p.Hash, p.Timestamp})
		if p.Timestamp.After(last) {
			last = p.Timestamp
		}
	}
	start := last.Truncate(w)
	flows := map[uint64]bool{}
	for _, p := range pkts {
		if !p.ts.Before(start) {
			flows[p.hash] = true
		}
	}
	return len(flows)
}

// TestWindowFlowsAfterReplay scrapes flowmon_flowcount_window_flows after a
// replay: it must read the flows of the trace's final window (the window
// served on /api/v1/ccf), not the empty window the replay's end begins.
// With the default 60 s window the 30 s sample is one window; with 10 s
// the final window is the last, partial one.
func TestWindowFlowsAfterReplay(t *testing.T) {
	for _, tc := range []struct {
		name    string
		window  time.Duration
		workers int
	}{
		{"60s one worker", 60 * time.Second, 1},
		{"60s two workers", 60 * time.Second, 2},
		{"10s two workers", 10 * time.Second, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const sample = "../pcaps/sample.pcap"
			cfg := DefaultConfig()
			cfg.ACSM.Capacity, cfg.FlowCount.ExpectedFlows = 4096, 4096
			cfg.FlowCount.Window = tc.window
			cfg.Workers = tc.workers
			pl, err := NewPipeline(cfg)
			if err != nil {
				t.Fatal(err)
			}
			h, err := Handler(pl, nil)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			if _, err := Replay(context.Background(), []string{sample}, ReplayOptions{Pipeline: pl}); err != nil {
				t.Fatal(err)
			}
			resp, err := http.Get(srv.URL + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			parser := expfmt.NewTextParser(model.LegacyValidation)
			fams, err := parser.TextToMetricFamilies(resp.Body)
			if err != nil {
				t.Fatalf("metrics do not parse: %v", err)
			}
			f, ok := fams["flowmon_flowcount_window_flows"]
			if !ok || len(f.Metric) != 1 || f.Metric[0].Gauge == nil {
				t.Fatalf("flowmon_flowcount_window_flows: %v", f)
			}
			got := f.Metric[0].Gauge.GetValue()
			want := finalWindowFlows(t, sample, tc.window)
			if want == 0 {
				t.Fatal("reference: no flow in the final window")
			}
			if got != float64(want) {
				t.Errorf("flowmon_flowcount_window_flows %v, want the final window's %d flows", got, want)
			}
		})
	}
}
