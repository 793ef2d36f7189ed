package rotfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// clock is a settable time for the files' age.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newClock() *clock { return &clock{t: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)} }

// files reads path, path.1, ... up to the first missing number past
// max, and fails if any number past max exists.
func files(t *testing.T, path string, max int) []string {
	t.Helper()
	var out []string
	for i := 0; i <= max+2; i++ {
		b, err := os.ReadFile(numbered(path, i))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if i > max {
			t.Errorf("%s exists, past max files %d", numbered(path, i), max)
		}
		for len(out) < i {
			out = append(out, "<missing>")
		}
		out = append(out, string(b))
	}
	return out
}

func mustWrite(t *testing.T, w *File, s string) {
	t.Helper()
	if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
		t.Fatalf("write %q: %d, %v", s, n, err)
	}
}

func mustOpen(t *testing.T, path string, o Options) *File {
	t.Helper()
	w, _, err := Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// TestRotateBySize: the lines that fit stay in the file, the rest start
// the next; a line longer than max size is alone; at most max files are
// kept, newest first.
func TestRotateBySize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	w := mustOpen(t, path, Options{MaxSize: 10, MaxFiles: 3})
	mustWrite(t, w, "aaa\nbbb\n")              // 8 bytes: fits
	mustWrite(t, w, "cc\ndd\n")                // cc fits (10), dd goes on
	mustWrite(t, w, "a-line-of-twenty-b\n")    // longer than 10: alone
	mustWrite(t, w, "e\nf\n")                  // after the long line: a new file
	mustWrite(t, w, "ggggg\nhhhhh\niiiiiii\n") // g fills it, h and i each a file
	want := []string{"iiiiiii\n", "hhhhh\n", "e\nf\nggggg\n", "a-line-of-twenty-b\n"}
	if got := files(t, path, 3); !equal(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
}

// TestRotateByAge: a file older than max age rotates at the next write,
// not before; an empty one never, and its age starts with its first
// line.
func TestRotateByAge(t *testing.T) {
	c := newClock()
	path := filepath.Join(t.TempDir(), "log")
	w := mustOpen(t, path, Options{MaxAge: time.Hour, MaxFiles: 2, now: c.now})
	c.t = c.t.Add(2 * time.Hour) // empty: no rotation
	mustWrite(t, w, "a\n")
	c.t = c.t.Add(59 * time.Minute)
	mustWrite(t, w, "b\n")
	c.t = c.t.Add(time.Minute) // an hour since a was written
	mustWrite(t, w, "c\n")
	c.t = c.t.Add(3 * time.Hour)
	mustWrite(t, w, "d\n")
	c.t = c.t.Add(time.Hour)
	mustWrite(t, w, "e\n")
	if got, want := files(t, path, 2), []string{"e\n", "d\n", "c\n"}; !equal(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
}

// TestAgeOfAFileFound: a file Open finds is as old as its birth time, so
// a restart does not give an old file a new lease; without a birth time
// its age runs from the Open.
func TestAgeOfAFileFound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("old\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	st, err := statPath(path)
	if err != nil {
		t.Fatal(err)
	}
	born, ok := time.Unix(0, st.id.born), st.id.born != 0
	c := &clock{t: time.Now().Add(2 * time.Hour)}
	w := mustOpen(t, path, Options{MaxAge: time.Hour, MaxFiles: 1, now: c.now})
	mustWrite(t, w, "new\n")
	got := files(t, path, 1)
	if ok {
		t.Logf("birth time %v", born)
		if want := []string{"new\n", "old\n"}; !equal(got, want) {
			t.Errorf("with a birth time: files %q, want %q", got, want)
		}
	} else if want := []string{"old\nnew\n"}; !equal(got, want) {
		t.Errorf("without a birth time: files %q, want %q", got, want)
	}
}

// TestOpenCutsPartialLine: Open keeps a file's whole lines, cuts a
// partial last one (any length, across the read blocks), and appends
// after them.
func TestOpenCutsPartialLine(t *testing.T) {
	long := strings.Repeat("x", 10000)
	for _, c := range []struct {
		before, want string
		cut          int64
	}{
		{"", "c\n", 0},
		{"a\nb\n", "a\nb\nc\n", 0},
		{"a\nb\npart", "a\nb\nc\n", 4},
		{"no newline at all", "c\n", 17},
		{"a\n" + long, "a\nc\n", int64(len(long))},
		{long + "\n" + long, long + "\nc\n", int64(len(long))},
	} {
		path := filepath.Join(t.TempDir(), "log")
		if c.before != "" {
			if err := os.WriteFile(path, []byte(c.before), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		w, cut, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		mustWrite(t, w, "c\n")
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		if string(got) != c.want || cut != c.cut {
			t.Errorf("%.20q: file %.20q (%d bytes), cut %d; want %.20q, cut %d", c.before, got, len(got), cut, c.want, c.cut)
		}
	}
}

// TestMode: a new file takes the options' mode, 0o640 by default.
func TestMode(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		mode, want fs.FileMode
	}{{0, 0o640}, {0o600, 0o600}} {
		path := filepath.Join(dir, fmt.Sprintf("log%o", c.mode))
		w := mustOpen(t, path, Options{Mode: c.mode, MaxSize: 2})
		mustWrite(t, w, "a\nb\n") // the second file is the writer's
		for _, p := range []string{path, path + ".1"} {
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != c.want {
				t.Errorf("%s: %v %v, want %v", p, fi.Mode(), err, c.want)
			}
		}
	}
}

// TestRotationRetried: a rotation that fails (path.1 cannot be replaced)
// fails the write, leaves the files, and the next write after the cause
// is gone rotates once, losing nothing.
func TestRotationRetried(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	w := mustOpen(t, path, Options{MaxSize: 4, MaxFiles: 2})
	mustWrite(t, w, "a\nb\n")
	mustWrite(t, w, "c\nd\n") // a, b to path.1
	// path.2 a directory with a file in it: path.1 cannot be moved onto it.
	if err := os.MkdirAll(filepath.Join(path+".2", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if n, err := w.Write([]byte("e\n")); n != 0 || err == nil {
			t.Fatalf("write while path.2 is a directory: %d, %v", n, err)
		}
	}
	if err := os.RemoveAll(path + ".2"); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, w, "e\n")
	if got, want := files(t, path, 2), []string{"e\n", "c\nd\n", "a\nb\n"}; !equal(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
