//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunReloadsWatchlists: the config's watchlists change at SIGHUP: a
// list added is opened; removing a list a rule still names is refused,
// said on stderr, and the lists stay as they were (a list moved to
// another file at the same SIGHUP too); once the rule goes the change is
// made; a restart-only key (the flow history) changed is said and leaves
// the lists. The lists' sizes show in the API.
func TestRunReloadsWatchlists(t *testing.T) {
	n := liveNet(t)
	bin := buildFlowmon(t)
	dir := t.TempDir()
	write := writerIn(t, dir)
	rule := func(list string) string {
		return "groups:\n  - name: w\n    rules:\n      - alert: Listed\n        kind: watchlist\n        watchlist: {list: " + list + "}\n"
	}
	write("rules.yaml", rule("blocked"))
	write("blocked.txt", "192.0.2.0/24\n")
	write("scanners.txt", "198.51.100.1\n198.51.100.2\n")
	write("scanners2.txt", "203.0.113.0/24\n")
	cfg := func(lists ...string) {
		write("flowmon.yaml", "rules: rules.yaml\nwatchlists:\n  dir: state\n  lists:\n"+strings.Join(lists, ""))
	}
	blocked, scanners := "    - {name: blocked, file: blocked.txt}\n", "    - {name: scanners, file: scanners.txt}\n"
	if err := os.Mkdir(filepath.Join(dir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg(blocked)
	a := startAgent(t, bin, n, "--config", filepath.Join(dir, "flowmon.yaml"), "--log-format", "json")
	sizes := func(want map[string]int) {
		t.Helper()
		code, body := a.get(t, n, "/api/v1/watchlists/")
		var got map[string]int
		if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("GET /api/v1/watchlists/: %d %s, want %v", code, body, want)
		}
	}
	// hup signals the agent and returns what its config reload said:
	// the log record's message, and its error.
	hup := func() string {
		t.Helper()
		before := len(a.stderr.String())
		a.cmd.Process.Signal(syscall.SIGHUP)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			s := a.stderr.String()
			for _, r := range logRecords(t, s[before:]) {
				if msg, _ := r["msg"].(string); strings.HasPrefix(msg, "SIGHUP: reload") && r["what"] == "config" {
					err, _ := r["err"].(string)
					return msg + ": " + err
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no config reload after SIGHUP:\n%s", s)
			}
		}
	}
	sizes(map[string]int{"blocked": 1})

	cfg(blocked, scanners)
	if got := hup(); !strings.HasPrefix(got, "SIGHUP: reloaded: ") {
		t.Errorf("adding a list: %s", got)
	}
	sizes(map[string]int{"blocked": 1, "scanners": 2})
	if _, err := os.Stat(filepath.Join(dir, "state", "scanners.wl")); err != nil {
		t.Errorf("the added list does not persist in the config's dir: %v", err)
	}

	cfg(strings.Replace(scanners, "scanners.txt", "scanners2.txt", 1))
	if got := hup(); !strings.Contains(got, "watchlists: "+filepath.Join(dir, "rules.yaml")+`:4:9: rule "Listed": no watchlist "blocked" (the agent has [scanners])`) {
		t.Errorf("removing a list a rule names: %s", got)
	}
	sizes(map[string]int{"blocked": 1, "scanners": 2}) // all or nothing: not moved to its new file either

	write("rules.yaml", rule("scanners"))
	if got := hup(); !strings.HasPrefix(got, "SIGHUP: reloaded: ") {
		t.Errorf("the list and the rule naming it gone together: %s", got)
	}
	sizes(map[string]int{"scanners": 1})

	// A config that is fine beside a rules file that is not: the reload
	// says the rules did not load, not that it worked.
	write("rules.yaml", "groups: [\n")
	if got := hup(); strings.HasPrefix(got, "SIGHUP: reloaded: ") || !strings.Contains(got, "rules.yaml") {
		t.Errorf("a broken rules file: %s", got)
	}
	write("rules.yaml", rule("scanners"))

	write("flowmon.yaml", "rules: rules.yaml\nhistory: {dir: hist}\nwatchlists:\n  dir: state\n  lists:\n"+blocked)
	if got := hup(); !strings.Contains(got, "history.dir changed: only a restart applies it") {
		t.Errorf("a restart-only key: %s", got)
	}
	sizes(map[string]int{"scanners": 1})
	a.stop(t)
}
