package testreport

import (
	"os"
	"strings"
	"testing"
)

func report(t *testing.T, stream string, status int) (*Report, []string) {
	t.Helper()
	r, err := Read(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	r.SetStatus(status)
	var b strings.Builder
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	return r, strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// TestGo126Stream reads what Go 1.26 printed for the module in
// testdata/gotest:
//
//	cd testdata/gotest && go test -json -timeout 2s -count 1 ./... 2>&1 |
//	  sed -E 's/"Time":"[^"]*",//; s/"Elapsed":[0-9.]+/"Elapsed":0/' >../go126.json
//
// Its packages: a passes, fails (in a subtest) and skips tests; b does not
// build; c panics in a test; d's TestMain exits before any test; e times
// out in TestSlow; n has no tests; p panics in init.
func TestGo126Stream(t *testing.T) {
	data, err := os.ReadFile("testdata/go126.json")
	if err != nil {
		t.Fatal(err)
	}
	r, out := report(t, string(data), 1)
	text := strings.Join(out, "\n")

	// Passed: a.TestPass, a.TestSubSkip (its subtests are not counted),
	// c.TestOK. Failed: a.TestFail, c.TestPanic, e.TestSlow (running at
	// the timeout, with no result of its own). Skipped: a.TestSkip.
	if got, want := out[len(out)-1], "3 passed, 3 failed, 1 skipped"; got != want {
		t.Errorf("last line %q, want %q", got, want)
	}
	if !r.Failed() {
		t.Error("Failed() = false")
	}
	wantPkgs := []string{"FAIL\ttj/a\t", "FAIL\ttj/b [build failed]", "FAIL\ttj/c\t", "FAIL\ttj/d\t",
		"FAIL\ttj/e\t", "?   \ttj/n\t[no test files]", "FAIL\ttj/p\t"}
	for i, prefix := range wantPkgs {
		if i >= len(out) || !strings.HasPrefix(out[i], prefix) {
			t.Errorf("package line %d: %q, want it to start with %q", i, out[min(i, len(out)-1)], prefix)
		}
	}
	if out[len(wantPkgs)] != "" || out[len(wantPkgs)+1] != "failures:" {
		t.Errorf("after the package lines: %q, want a blank line and \"failures:\"", out[len(wantPkgs):len(wantPkgs)+2])
	}
	for _, s := range []string{
		"a_test.go:7: before",                                   // the failed test's own log
		"a_test.go:9: sub bad",                                  // its failed subtest's
		"--- FAIL: TestFail/bad",                                // and their result lines
		`cannot use "s" (untyped string constant) as int value`, // b's build error
		"panic: boom",                                           // c's test panic
		"main out",                                              // d's TestMain, outside any test
		"panic: test timed out after 2s",                        // e
		"panic: init boom",                                      // p, outside any test
	} {
		if !strings.Contains(text, s) {
			t.Errorf("output lacks %q", s)
		}
	}
	for _, s := range []string{
		"pass log",    // a passing test's log
		"sub ok log",  // a passing subtest's log inside a failed test
		"why",         // a skipped test's reason
		"sub skipped", // a skipped subtest's
		"=== RUN",
		"TestFast", // never ran
	} {
		if strings.Contains(text, s) {
			t.Errorf("output has %q", s)
		}
	}
}

func TestAllPassed(t *testing.T) {
	stream := `{"Action":"start","Package":"x/ok"}
{"Action":"run","Package":"x/ok","Test":"TestA"}
{"Action":"output","Package":"x/ok","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"x/ok","Test":"TestA","Output":"    a_test.go:3: a log\n"}
{"Action":"output","Package":"x/ok","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"x/ok","Test":"TestA","Elapsed":0}
{"Action":"output","Package":"x/ok","Output":"PASS\n"}
{"Action":"output","Package":"x/ok","Output":"ok  \tx/ok\t0.003s\n"}
{"Action":"pass","Package":"x/ok","Elapsed":0.003}
{"Action":"start","Package":"x/none"}
{"Action":"output","Package":"x/none","Output":"?   \tx/none\t[no test files]\n"}
{"Action":"skip","Package":"x/none","Elapsed":0}
`
	r, out := report(t, stream, 0)
	want := []string{"ok  \tx/ok\t0.003s", "?   \tx/none\t[no test files]", "1 passed, 0 failed, 0 skipped"}
	if strings.Join(out, "\n") != strings.Join(want, "\n") || r.Failed() {
		t.Errorf("Failed() = %t, output:\n%s\nwant:\n%s", r.Failed(), strings.Join(out, "\n"), strings.Join(want, "\n"))
	}
}

// TestRepeatedRuns: -count 2 runs each test twice, and each run counts;
// the failure shows the failed run's output only.
func TestRepeatedRuns(t *testing.T) {
	stream := `{"Action":"run","Package":"x/r","Test":"TestR"}
{"Action":"output","Package":"x/r","Test":"TestR","Output":"    r_test.go:5: seed 1: fine\n"}
{"Action":"pass","Package":"x/r","Test":"TestR","Elapsed":0}
{"Action":"run","Package":"x/r","Test":"TestR"}
{"Action":"output","Package":"x/r","Test":"TestR","Output":"    r_test.go:7: seed 2: wrong\n"}
{"Action":"fail","Package":"x/r","Test":"TestR","Elapsed":0}
{"Action":"output","Package":"x/r","Output":"FAIL\n"}
{"Action":"output","Package":"x/r","Output":"FAIL\tx/r\t0.010s\n"}
{"Action":"fail","Package":"x/r","Elapsed":0.01}
`
	_, out := report(t, stream, 1)
	text := strings.Join(out, "\n")
	if out[len(out)-1] != "1 passed, 1 failed, 0 skipped" {
		t.Errorf("last line %q", out[len(out)-1])
	}
	if !strings.Contains(text, "seed 2: wrong") || strings.Contains(text, "seed 1: fine") {
		t.Errorf("failure excerpt:\n%s", text)
	}
}

// TestCutShort: the stream ends inside a test (go test killed): the test
// and its package fail.
func TestCutShort(t *testing.T) {
	stream := `{"Action":"run","Package":"x/k","Test":"TestK"}
{"Action":"output","Package":"x/k","Test":"TestK","Output":"    k_test.go:9: step 1\n"}
`
	r, out := report(t, stream, 0)
	text := strings.Join(out, "\n")
	if !r.Failed() || !strings.HasPrefix(out[0], "FAIL\tx/k") || !strings.Contains(text, "step 1") ||
		out[len(out)-1] != "0 passed, 1 failed, 0 skipped" {
		t.Errorf("Failed() = %t, output:\n%s", r.Failed(), text)
	}
}

// TestNoJSON: go test failing before any package (a bad flag, no module)
// prints text on stderr and exits non-zero; that text and the status are
// the report.
func TestNoJSON(t *testing.T) {
	stream := "go: cannot find main module, but found .git/config in /x\n"
	r, out := report(t, stream, 1)
	text := strings.Join(out, "\n")
	if !r.Failed() || !strings.Contains(text, "cannot find main module") ||
		!strings.Contains(text, "exited with status 1") || out[len(out)-1] != "0 passed, 0 failed, 0 skipped" {
		t.Errorf("Failed() = %t, output:\n%s", r.Failed(), text)
	}
}
