package rotfile

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/flowmon/flowmon/internal/testutil/tmpfstest"
)

// TestWriteFailureTruncates: a write that fills the filesystem (a tmpfs
// of 64 KiB) fails whole: the file keeps the lines written before it,
// not a byte of the failed write, and once there is room again the next
// write goes after them.
func TestWriteFailureTruncates(t *testing.T) {
	dir := tmpfstest.New(t, 64<<10)
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 16<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "log")
	w := mustOpen(t, path, Options{})
	line := func(i int) string { return fmt.Sprintf("%04d %s\n", i, strings.Repeat("x", 994)) } // 1000 bytes
	var want bytes.Buffer
	i := 0
	for ; ; i++ {
		n, err := w.Write([]byte(line(i)))
		if err != nil {
			if !errors.Is(err, syscall.ENOSPC) || n != 0 {
				t.Fatalf("write %d: %d, %v; want 0, ENOSPC", i, n, err)
			}
			break
		}
		want.WriteString(line(i))
		if i > 100 {
			t.Fatal("64 KiB took 100 KB")
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("after the failure the file has %d bytes, want the %d of the writes before it", len(got), want.Len())
	}
	// The failing write's size did not divide the tmpfs's pages: part
	// of it was on disk before the truncation.
	if want.Len()%4096 == 0 {
		t.Logf("the writes ended on a page boundary: no partial write was truncated")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, w, line(i))
	want.WriteString(line(i))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want.Bytes()) {
		t.Errorf("after room was made the file has %d bytes, want %d", len(got), want.Len())
	}
}
