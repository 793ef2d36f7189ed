//go:build unix

package config

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCheckHost: a user that does not exist, a missing directory, and a
// directory the user cannot write are each refused naming the key; a
// configuration whose directories are there passes.
func TestCheckHost(t *testing.T) {
	dir := t.TempDir()
	good := Default()
	good.Snapshot.Path = filepath.Join(dir, "state.snap")
	good.FlowLog = filepath.Join(dir, "flows.jsonl")
	good.History.Dir = filepath.Join(dir, "history") // made by the agent
	if err := good.CheckHost(); err != nil {
		t.Fatalf("a good configuration: %v", err)
	}
	missing := good
	missing.Watchlists.Dir = filepath.Join(dir, "no", "such")
	missing.Snapshot.Path = filepath.Join(dir, "gone", "state.snap")
	if err := missing.CheckHost(); err == nil || !strings.Contains(err.Error(), "watchlists.dir:") || !strings.Contains(err.Error(), "snapshot.path:") {
		t.Errorf("missing directories: %v", err)
	}
	nobody := good
	nobody.User = "no-such-user-flowmon"
	if err := nobody.CheckHost(); err == nil || !strings.Contains(err.Error(), "user:") {
		t.Errorf("an unknown user: %v", err)
	}
	if os.Getuid() == 0 {
		// As user nobody, a directory only root may write is refused; as
		// root, one only nobody may write (the agent drops the capability
		// that would let root write there).
		locked := filepath.Join(dir, "locked")
		if err := os.Mkdir(locked, 0o755); err != nil {
			t.Fatal(err)
		}
		c := good
		c.User = "nobody"
		c.Snapshot.Path = filepath.Join(locked, "state.snap")
		if err := c.CheckHost(); err == nil || !strings.Contains(err.Error(), "not writable by user nobody") {
			t.Errorf("a directory nobody cannot write: %v", err)
		}
		u, err := user.Lookup("nobody")
		if err != nil {
			t.Skip(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		theirs := filepath.Join(dir, "theirs")
		if err := os.Mkdir(theirs, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(theirs, uid, -1); err != nil {
			t.Fatal(err)
		}
		c = good
		c.Snapshot.Path = filepath.Join(theirs, "state.snap")
		if err := c.CheckHost(); err == nil || !strings.Contains(err.Error(), "snapshot.path:") {
			t.Errorf("root and a directory only nobody may write: %v", err)
		}
	}
}

// TestCheckHostAlertFile: an alerting file's file sink in a directory
// that is not there is refused at the check, not at the first alert.
func TestCheckHostAlertFile(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		path string
		ok   bool
	}{{filepath.Join(dir, "alerts.jsonl"), true}, {filepath.Join(dir, "nowhere", "alerts.jsonl"), false}} {
		file := filepath.Join(dir, "alerting.yaml")
		if err := os.WriteFile(file, []byte("sinks:\n  - name: file\n    type: file\n    path: "+c.path+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg := Default()
		cfg.Alerting = file
		err := cfg.CheckHost()
		if (err == nil) != c.ok || err != nil && !strings.Contains(err.Error(), "alerting:") {
			t.Errorf("alert file %s: %v", c.path, err)
		}
	}
}
