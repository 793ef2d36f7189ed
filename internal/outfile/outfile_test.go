package outfile

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAppendLines: AppendLines keeps a file's whole lines, cuts a partial
// last one (any length, across the read blocks), and appends after them.
func TestAppendLines(t *testing.T) {
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
		name := filepath.Join(t.TempDir(), "flows.jsonl")
		if c.before != "" {
			if err := os.WriteFile(name, []byte(c.before), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		f, cut, err := AppendLines(name, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("c\n")); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(name)
		if string(got) != c.want || cut != c.cut {
			t.Errorf("%.20q: file %.20q (%d bytes), cut %d; want %.20q, cut %d", c.before, got, len(got), cut, c.want, c.cut)
		}
	}
}
