package alerts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/flowmon/flowmon/internal/rotfile"
	"github.com/flowmon/flowmon/internal/testutil/tmpfstest"
)

// TestFileSinkDiskFull: on a full filesystem (a tmpfs of 64 KiB) the
// sink's writes fail, counted, and it says it is failing; the file holds
// the alerts counted sent;
// once there is room again every alert queued arrives after them, once
// and in order, with nothing of the failed writes between.
func TestFileSinkDiskFull(t *testing.T) {
	dir := tmpfstest.New(t, 64<<10)
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 56<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "alerts.jsonl")
	s, err := newFileSink("archive", path, rotfile.Options{}, FormatJSON, fastRetry)
	if err != nil {
		t.Fatal(err)
	}
	const first, n = 5, 200 // a few lines, then well past the 8 KiB left
	sendAll(t, s, 0, first)
	waitFor(t, "the first alerts written", func() bool { return s.Stats().Sent == first })
	sendAll(t, s, first, n)
	waitFor(t, "failed writes", func() bool { return s.Stats().Failed >= 2 })
	st := s.Stats()
	if st.Sent < first || st.Sent >= n || st.Dropped != 0 || !errors.Is(st.Failing, syscall.ENOSPC) {
		t.Fatalf("stats while the disk is full %+v", st)
	}
	// The alerts counted sent are in the file, whole. (The sink retries
	// meanwhile, so a failing write may be in it for a moment before it
	// is cut off: what stays is checked at the end.)
	got := readFile(t, path)
	var sent []byte
	for i := range int(st.Sent) {
		a := seqAlert(i)
		sent = FormatJSON.appendLine(sent, &a)
	}
	if len(got) < len(sent) || got[:len(sent)] != string(sent) {
		t.Errorf("the file does not start with the %d alerts sent", st.Sent)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the queue to drain", func() bool { return s.Stats().Queued == 0 })
	if st := s.Stats(); st.Failing != nil {
		t.Errorf("still failing after it delivered: %v", st.Failing)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantSeqLines(t, readFile(t, path), FormatJSON, 0, n)
}
