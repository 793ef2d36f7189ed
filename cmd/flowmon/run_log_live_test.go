package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// logRecords parses s, lines of a run's stderr with --log-format json,
// failing the test on a line that is not one JSON object.
func logRecords(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if l == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("a stderr line that is not one JSON object: %q: %v", l, err)
		}
		out = append(out, r)
	}
	return out
}

// textRecord is one line of slog's text handler.
var textRecord = regexp.MustCompile(`^time=\S+ level=(DEBUG|INFO|WARN|ERROR) msg=`)

// TestRunLogFormat: flowmon run's stderr holds its log alone, in the
// format asked (log-format in the config, --log-format over it): with
// json every line is one object with time, level and msg, with text
// every line is slog's key=value form. The run below writes the kinds
// of line a run writes: its start, an IPFIX collector failing, the
// alerts (no other output named), the stop's summary warnings and the
// run's error (the collector's records unsent); the summary itself goes
// to stdout.
func TestRunLogFormat(t *testing.T) {
	n := liveNet(t)
	bin := buildFlowmon(t)
	dir := t.TempDir()
	trace := filepath.Join(dir, "alerts.pcap")
	if out, err := exec.Command(bin, "gen", "-o", trace, "--flows", "2000", "--duration", "2s",
		"--mix", "normal=0.9,synflood=0.05,scan=0.05", "--seed", "3").CombinedOutput(); err != nil {
		t.Fatalf("flowmon gen: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name, config string
		args         []string
	}{
		{"json from the config", "log-format: json\n", nil},
		{"json from the flag", "log-format: text\n", []string{"--log-format", "json"}},
		{"text", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "flowmon.yaml")
			// Nothing listens on the namespace's port 9: the collector
			// refuses.
			writeFile(t, cfg, tc.config+"export: {ipfix: {collectors: [\"127.0.0.1:9\"], transport: tcp}}\nstop-timeout: 4s\n")
			a := startAgent(t, bin, n, append([]string{"--config", cfg}, tc.args...)...)
			if _, err := n.Tcpreplay(t, n.A, trace); err != nil {
				t.Fatal(err)
			}
			get := func(p string) (int, string) { return a.get(t, n, p) }
			waitHealth(t, a, get, 503, "ipfix:127.0.0.1:9 failing since")
			if code, _ := stopStatus(t, a, 20*time.Second); code != 0 && code != 3 {
				t.Errorf("exit %d", code)
			}
			stderr := a.stderr.String()
			var sum struct{ Alerts map[string]uint64 }
			if err := json.Unmarshal(a.stdout.Bytes(), &sum); err != nil {
				t.Errorf("stdout is not the summary: %q", a.stdout.String())
			}
			if strings.HasPrefix(tc.name, "text") {
				for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
					if !textRecord.MatchString(l) {
						t.Errorf("a stderr line not in slog's text form: %q", l)
					}
				}
				return
			}
			msgs := map[string]int{}
			for _, r := range logRecords(t, stderr) {
				for _, k := range []string{"time", "level", "msg"} {
					if _, ok := r[k].(string); !ok {
						t.Errorf("a record without %s: %v", k, r)
					}
				}
				msgs[r["msg"].(string)]++
				if r["msg"] == "component failing" && r["component"] != "ipfix:127.0.0.1:9" {
					t.Errorf("a failure not the collector's: %v", r)
				}
			}
			want := []string{"capturing on the interface", "component failing"}
			fired := uint64(0)
			for _, n := range sum.Alerts {
				fired += n
			}
			if fired > 0 {
				want = append(want, "alert") // on stderr, no other output named
			}
			for _, want := range want {
				if msgs[want] == 0 {
					t.Errorf("no %q record in:\n%s", want, stderr)
				}
			}
		})
	}
}
