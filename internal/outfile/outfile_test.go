package outfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/flowmon/flowmon/internal/lockfile"
)

// TestCreate: a path is a new file, whatever was there before; "-" is
// the stdout given, which Close leaves open.
func TestCreate(t *testing.T) {
	name := filepath.Join(t.TempDir(), "out")
	if err := os.WriteFile(name, []byte("old contents\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(name); string(got) != "new\n" {
		t.Errorf("file %q, want the new contents only", got)
	}
	var stdout bytes.Buffer
	s, err := Create("-", &stdout)
	if err != nil {
		t.Fatal(err)
	}
	s.Write([]byte("x\n"))
	if err := s.Close(); err != nil || stdout.String() != "x\n" {
		t.Errorf("stdout %q, close %v", stdout.String(), err)
	}
}

// TestCreateHeld: a file another writer has open is neither emptied nor
// written: the second Create fails, naming the holder.
func TestCreateHeld(t *testing.T) {
	name := filepath.Join(t.TempDir(), "flows.jsonl")
	first, err := Create(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	first.Write([]byte("first's record\n"))
	if _, err := Create(name, nil); !errors.Is(err, lockfile.ErrHeld) {
		t.Fatalf("second Create: %v, want lockfile.ErrHeld", err)
	}
	if got, _ := os.ReadFile(name); string(got) != "first's record\n" {
		t.Errorf("file %q after the second Create, want the first's record", got)
	}
	first.Close()
	second, err := Create(name, nil)
	if err != nil {
		t.Fatalf("Create once the first closed: %v", err)
	}
	second.Close()
	if devnull, err := Create(os.DevNull, nil); err != nil {
		t.Errorf("Create(%s): %v", os.DevNull, err)
	} else {
		devnull.Close()
	}
}
