package bpf

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedUpToDate: regenerating the objects and their Go bindings
// from capture.c and flowstate.c (gen.go's go:generate lines, into a
// temporary folder)
// gives the committed files byte for byte. It needs clang, which CI
// installs (scripts/install-deps.sh test); without it the test skips,
// saying so.
func TestGeneratedUpToDate(t *testing.T) {
	if _, err := exec.LookPath("clang"); err != nil {
		t.Skip("clang not installed (scripts/install-deps.sh test installs it): cannot regenerate")
	}
	src, err := os.ReadFile("gen.go")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(l, "//go:generate go tool bpf2go "); ok {
			lines = append(lines, rest)
		}
	}
	if len(lines) == 0 {
		t.Fatal("gen.go has no go:generate line running bpf2go")
	}
	for _, line := range lines {
		args, err := splitArgs(line)
		if err != nil {
			t.Fatal(err)
		}
		checkGenerated(t, args)
	}
}

// checkGenerated runs bpf2go with args (its stem first, then the C
// file, after the flags) into a temporary folder and compares its files
// with the committed ones.
func checkGenerated(t *testing.T, args []string) {
	t.Helper()
	stem := args[len(args)-2]
	dir := t.TempDir()
	cmd := exec.Command("go", append([]string{"tool", "bpf2go", "-output-dir", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GOPACKAGE=bpf")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bpf2go: %v\n%s", err, out)
	}
	for _, name := range []string{stem + "_bpfel.go", stem + "_bpfel.o", stem + "_bpfeb.go", stem + "_bpfeb.o"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what its C source generates: run make generate and commit the result", name)
		}
	}
}

// splitArgs splits a go:generate line as go generate does: on spaces,
// with double-quoted arguments kept whole.
func splitArgs(s string) ([]string, error) {
	var args []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				return nil, os.ErrInvalid
			}
			args = append(args, s[1:end+1])
			s = s[end+2:]
			continue
		}
		arg, rest, _ := strings.Cut(s, " ")
		args = append(args, arg)
		s = rest
	}
	return args, nil
}
