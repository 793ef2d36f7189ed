package alerts

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/flowmon/flowmon/internal/rotfile"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFileSink: alerts are appended to what the file holds already.
func TestFileSink(t *testing.T) {
	path := filepath.Join(t.TempDir(), "alerts.jsonl")
	for _, r := range [][2]int{{0, 30}, {30, 70}} { // the second run appends
		s, err := newFileSink("archive", path, rotfile.Options{}, FormatJSON, fastRetry)
		if err != nil {
			t.Fatal(err)
		}
		sendAll(t, s, r[0], r[1])
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); st != (SinkStats{Sent: uint64(r[1] - r[0])}) {
			t.Errorf("stats %+v", st)
		}
	}
	wantSeqLines(t, readFile(t, path), FormatJSON, 0, 70)
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("stat: %v %v", fi, err)
	}
}

// TestFileSinkRotation: each file stays within max size, max files are
// kept, oldest highest, and together they hold the newest lines in order.
func TestFileSinkRotation(t *testing.T) {
	one := seqAlert(0)
	line := len(FormatJSON.appendLine(nil, &one)) // seq 0..9: one width
	path := filepath.Join(t.TempDir(), "alerts.jsonl")
	s, err := newFileSink("archive", path, rotfile.Options{MaxSize: int64(3 * line), MaxFiles: 2}, FormatJSON, fastRetry)
	if err != nil {
		t.Fatal(err)
	}
	// One at a time and all at once must cut the files at the same lines.
	for i := range 5 {
		sendAll(t, s, i, i+1)
		waitFor(t, "the alert written", func() bool { return s.Stats().Sent == uint64(i+1) })
	}
	sendAll(t, s, 5, 10)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantSeqLines(t, readFile(t, path+".2"), FormatJSON, 3, 6)
	wantSeqLines(t, readFile(t, path+".1"), FormatJSON, 6, 9)
	wantSeqLines(t, readFile(t, path), FormatJSON, 9, 10)
	if _, err := os.Stat(path + ".3"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s.3: %v, want it not to exist", path, err)
	}
}

// TestFileSinkLongLine: a line longer than max size is written alone.
func TestFileSinkLongLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "alerts.jsonl")
	s, err := newFileSink("archive", path, rotfile.Options{MaxSize: 10, MaxFiles: 3}, FormatText, fastRetry)
	if err != nil {
		t.Fatal(err)
	}
	sendAll(t, s, 0, 3)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, p := range []string{path + ".2", path + ".1", path} {
		wantSeqLines(t, readFile(t, p), FormatText, i, i+1)
	}
}

// TestFileSinkRotationFails: a rotation that fails is retried, the alerts
// wait, and none is lost or written twice once it succeeds.
func TestFileSinkRotationFails(t *testing.T) {
	one := seqAlert(0)
	line := len(FormatJSON.appendLine(nil, &one))
	path := filepath.Join(t.TempDir(), "alerts.jsonl")
	// path.1 a directory with a file in it: path cannot be renamed onto it.
	if err := os.MkdirAll(filepath.Join(path+".1", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := newFileSink("archive", path, rotfile.Options{MaxSize: int64(2 * line), MaxFiles: 1}, FormatJSON, fastRetry)
	if err != nil {
		t.Fatal(err)
	}
	sendAll(t, s, 0, 5)
	waitFor(t, "failed rotations", func() bool { return s.Stats().Failed >= 3 })
	if st := s.Stats(); st.Sent != 2 || st.Queued != 3 || st.Dropped != 0 {
		t.Errorf("stats while failing %+v", st)
	}
	if err := os.RemoveAll(path + ".1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the queue to drain", func() bool { return s.Stats().Queued == 0 })
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantSeqLines(t, readFile(t, path+".1"), FormatJSON, 2, 4)
	wantSeqLines(t, readFile(t, path), FormatJSON, 4, 5)
}

func TestFileSinkOpenError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "alerts.jsonl")
	if _, err := newFileSink("archive", path, rotfile.Options{}, FormatJSON, fastRetry); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("got %v, want ErrNotExist", err)
	}
}
