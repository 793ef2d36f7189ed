//go:build linux

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRunSecondAgentOnHeldState: a second flowmon run on the state a
// running agent holds (the same snapshot and flow log, its own listen
// address, so nothing else stops it) exits 2 before it restores or cuts
// anything, naming the file and the running agent's PID; the running
// agent's flow log is untouched, byte for byte, and its stop writes each
// record once.
func TestRunSecondAgentOnHeldState(t *testing.T) {
	n := liveNet(t)
	bin := buildFlowmon(t)
	trace := writeLiveTrace(t, 800, 6, 43)
	dir := t.TempDir()
	snap, flowLog := filepath.Join(dir, "state.snap"), filepath.Join(dir, "flows.jsonl")
	args := []string{"--workers", "2", "--snapshot", snap, "--snapshot-interval", "1s", "--flows-out", flowLog}
	a := startAgent(t, bin, n, args...)
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := n.Tcpreplay(t, n.A, trace, "--pps", "2500"); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	// Wait until the agent has written records and a snapshot with their
	// mark: what a second agent would restore and rewind the log to.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		b, _ := os.ReadFile(flowLog)
		if _, err := os.Stat(snap); err == nil && bytes.Count(b, []byte("\n")) > 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot and records within 20 s:\n%s", a.stderr)
		}
	}
	before, err := os.ReadFile(flowLog)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	second := n.Cmd(bin, append([]string{"run", "--iface", n.B, "--json", "--rules", "none", "--listen", "127.0.0.1:9101"}, args...)...)
	second.Stdout, second.Stderr = &out, &errOut
	done := make(chan error, 1)
	go func() { done <- second.Run() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		second.Process.Kill()
		t.Fatalf("the second agent is still running after 30 s:\n%s", errOut.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("the second agent: %v, want exit status 2:\n%s", err, errOut.String())
	}
	msg := errOut.String()
	for _, want := range []string{snap, "PID " + strconv.Itoa(a.cmd.Process.Pid)} {
		if !strings.Contains(msg, want) {
			t.Errorf("the second agent's error does not name %q:\n%s", want, msg)
		}
	}
	for _, never := range []string{"restored", "cut the records"} {
		if strings.Contains(msg, never) {
			t.Errorf("the second agent said %q before it stopped:\n%s", never, msg)
		}
	}
	after, err := os.ReadFile(flowLog)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(after, before) {
		t.Fatalf("the running agent's flow log changed under the second: %d bytes before, %d after, not its start", len(before), len(after))
	}
	s := a.stop(t)
	final, err := os.ReadFile(flowLog)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(final, before) {
		t.Errorf("the flow log at the stop does not start with the %d bytes it had", len(before))
	}
	uids, lines := logUIDs(t, final)
	for uid, n := range uids {
		if n > 1 {
			t.Errorf("record %s written %d times", uid, n)
		}
	}
	if got := s.Records["connlog"].Written; got != uint64(lines) {
		t.Errorf("summary: %d records written; the log has %d lines", got, lines)
	}
	t.Logf("the second agent exited 2 on the held state; the first wrote %d records, %d before the second started", lines, bytes.Count(before, []byte("\n")))
}
