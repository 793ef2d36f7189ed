package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestLogSink: each alert is one log record, its fields attributes, in
// the log's format.
func TestLogSink(t *testing.T) {
	var b bytes.Buffer
	s := NewLogSink("log", slog.New(slog.NewJSONHandler(&b, nil)), 16)
	at := time.Date(2024, 1, 1, 0, 0, 18, 0, time.UTC)
	s.Send(Alert{Labels: Labels{{"alertname", "PortScan"}, {"severity", "warning"}, {"src", "10.0.0.1"}}, StartsAt: at, Count: 3,
		Flow:        Flow{Proto: "tcp", Src: netip.MustParseAddr("10.0.0.1"), SrcPort: 5555, Dst: netip.MustParseAddr("10.0.0.2"), DstPort: 80},
		Annotations: map[string]string{"summary": "a scan"}})
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("logged %q", b.String())
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"level": "WARN", "msg": "alert", "state": "FIRING", "alertname": "PortScan", "severity": "warning",
		"labels": map[string]any{"src": "10.0.0.1"}, "count": 3.0, "flow": "tcp 10.0.0.1:5555->10.0.0.2:80", "summary": "a scan",
		"starts_at": "2024-01-01T00:00:18Z"}
	for k, v := range want {
		if g, _ := json.Marshal(got[k]); string(g) != mustJSON(v) {
			t.Errorf("%s: %s, want %s", k, g, mustJSON(v))
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
