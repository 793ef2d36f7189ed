// Package goldentest checks the errors a file loader reports against a
// golden file beside the input, for the packages whose bad test files
// each name what is wrong (rules, agent/config).
package goldentest

import (
	"os"
	"strings"
	"testing"
)

// CheckErrors compares err's message, the errors found in file, with
// file.golden (or writes that, with update), and checks that every line
// of it starts with file's name: each error names its position.
func CheckErrors(t *testing.T, file string, err error, update bool) {
	t.Helper()
	got := err.Error() + "\n"
	golden := file + ".golden"
	if update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, rerr := os.ReadFile(golden)
	if rerr != nil {
		t.Fatalf("%s: %v (go test -run TestBadFiles -update writes it)", file, rerr)
	}
	if got != string(want) {
		t.Errorf("%s: errors differ\ngot:\n%swant:\n%s", file, got, want)
	}
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		if !strings.HasPrefix(line, file+":") {
			t.Errorf("%s: message without its position: %s", file, line)
		}
	}
}
