package pipeline

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/flowmon/flowmon/filters/ccf"
	"github.com/flowmon/flowmon/pipeline/flowcount"
)

// TestHandlerServesMetricsAndCCF replays the sample through a pipeline
// whose HTTP API is served, and reads both endpoints as a scraper and a
// peer would.
func TestHandlerServesMetricsAndCCF(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ACSM.Capacity, cfg.FlowCount.ExpectedFlows = 4096, 4096
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
	s, err := Replay(context.Background(), []string{"../pcaps/sample.pcap"}, ReplayOptions{Pipeline: pl})
	if err != nil {
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
	sum := func(name string) float64 {
		f, ok := fams[name]
		if !ok {
			t.Fatalf("no metric %s", name)
		}
		var v float64
		for _, m := range f.Metric {
			switch {
			case m.Counter != nil:
				v += m.Counter.GetValue()
			case m.Gauge != nil:
				v += m.Gauge.GetValue()
			}
		}
		return v
	}
	if got := sum("flowmon_capture_packets_total"); got != float64(s.Packets) {
		t.Errorf("flowmon_capture_packets_total %v, summary %d", got, s.Packets)
	}
	if got := sum("flowmon_pipeline_unique_packets_total"); got != float64(s.UniquePackets) {
		t.Errorf("unique packets %v, summary %d", got, s.UniquePackets)
	}
	if got := sum("flowmon_dedup_duplicates_total"); got != float64(s.Duplicates) {
		t.Errorf("dedup duplicates %v, summary %d", got, s.Duplicates)
	}
	if _, ok := fams["flowmon_acsm_backend_memory_bytes"]; !ok {
		t.Error("no ACSM metrics")
	}
	for name := range fams {
		if !model.LegacyValidation.IsValidMetricName(name) || (strings.HasPrefix(name, "flowmon_") && strings.Count(name, "_") < 2) {
			t.Errorf("bad metric name %q", name)
		}
	}

	resp, err = http.Get(srv.URL + flowcount.Path)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s", flowcount.Path, resp.Status)
	}
	var f ccf.Filter
	if err := f.UnmarshalBinary(body); err != nil {
		t.Fatalf("served filter does not decode: %v", err)
	}
}
