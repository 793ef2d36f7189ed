//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReplaySecondWriterOfFlowsOut: a replay writing the --flows-out
// that another replay is writing exits 2, naming the file and the other
// replay's PID, and leaves that replay's output as a replay alone writes
// it.
func TestReplaySecondWriterOfFlowsOut(t *testing.T) {
	bin := buildFlowmon(t)
	trace, err := os.ReadFile("../../pcaps/sample.pcap")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, alone := filepath.Join(dir, "flows.jsonl"), filepath.Join(dir, "alone.jsonl")
	if code := run([]string{"replay", "--rules", "none", "--flows-out", alone, "../../pcaps/sample.pcap"}, &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
		t.Fatalf("replay alone: exit %d", code)
	}
	// The first replay reads standard input: it holds the file open until
	// the pipe is closed.
	first := exec.Command(bin, "replay", "--rules", "none", "--no-progress", "--flows-out", out, "-")
	stdin, err := first.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var firstErr bytes.Buffer
	first.Stderr = &firstErr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer first.Process.Kill()
	half := len(trace) / 2
	if _, err := stdin.Write(trace[:half]); err != nil {
		t.Fatal(err)
	}
	// Until the first replay has the file, a second one would take it.
	for waited := 0; ; waited++ {
		if _, err := os.Stat(out); err == nil {
			break
		}
		if waited > 1000 {
			t.Fatal("the first replay never opened its flows-out")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var errb bytes.Buffer
	code := run([]string{"replay", "--rules", "none", "--flows-out", out, "../../pcaps/sample.pcap"}, &bytes.Buffer{}, &errb)
	if code != 2 {
		t.Errorf("the second replay exited %d, want 2:\n%s", code, errb.String())
	}
	for _, want := range []string{out, "PID " + strconv.Itoa(first.Process.Pid)} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("the second replay's error does not name %q: %s", want, errb.String())
		}
	}
	if _, err := stdin.Write(trace[half:]); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	if err := first.Wait(); err != nil {
		t.Fatalf("the first replay: %v\n%s", err, firstErr.String())
	}
	got, _ := os.ReadFile(out)
	want, _ := os.ReadFile(alone)
	if len(want) == 0 || !bytes.Equal(got, want) {
		t.Errorf("the first replay's flows-out (%d bytes) differs from a replay's alone (%d bytes)", len(got), len(want))
	}
}
