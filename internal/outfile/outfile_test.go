package outfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
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
