package rules

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowmon/flowmon/conferr"
	"github.com/flowmon/flowmon/internal/testutil/goldentest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.bad.yaml.golden from the parser's output")

// TestGoodFiles parses and compiles every testdata/*.good.yaml and the
// embedded defaults.
func TestGoodFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.good.yaml")
	if len(files) == 0 {
		t.Fatal("no testdata/*.good.yaml")
	}
	for _, f := range files {
		s, err := Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if s.Len() == 0 {
			t.Errorf("%s: no rules", f)
		}
	}
	s, err := Default()
	if err != nil {
		t.Fatalf("default rules: %v", err)
	}
	if s.Len() < 5 {
		t.Errorf("default rules: %d rules, want one per gen scenario and the anomalies", s.Len())
	}
}

// TestBadFiles checks that every testdata/*.bad.yaml is refused with
// exactly the messages in its .golden file: each names file:line:col
// (and the rule), and all of a file's errors come at once.
func TestBadFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.bad.yaml")
	if len(files) == 0 {
		t.Fatal("no testdata/*.bad.yaml")
	}
	for _, f := range files {
		_, err := ParseFile(f)
		if err == nil {
			t.Errorf("%s: parsed without error", f)
			continue
		}
		var es conferr.Errors
		if !errors.As(err, &es) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: error %T does not list positioned errors: %v", f, err, err)
		}
		goldentest.CheckErrors(t, f, err, *update)
	}
}

func TestEmptyFile(t *testing.T) {
	_, err := Parse("empty.yaml", nil)
	if err == nil || !strings.HasPrefix(err.Error(), "empty.yaml:1:1: ") {
		t.Errorf("empty file: %v", err)
	}
}

// FuzzParse: nothing a rules file holds makes the parser panic, and a
// file it accepts compiles.
func FuzzParse(f *testing.F) {
	for _, g := range []string{"testdata/*.yaml", "default.yaml"} {
		files, _ := filepath.Glob(g)
		for _, file := range files {
			b, _ := os.ReadFile(file)
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse("fuzz.yaml", b)
		if err != nil {
			return
		}
		if _, err := Compile(file); err != nil {
			t.Fatalf("parsed but did not compile: %v", err)
		}
	})
}
