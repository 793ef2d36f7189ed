// Package testreport summarises the output of `go test -json` for
// scripts/test.sh (make test, .ci/run): the result line of each package,
// then, when something failed, only what explains it (the output of the
// failed tests, the output of failed builds, and a package's own output
// when it died outside any test: a panic in init, a TestMain exit, a
// timeout), and a closing line "N passed, N failed, N skipped".
//
// The counts are of top-level tests, once per run (-count 3 counts a test
// three times); subtests are not counted, but a failed subtest's output is
// shown under its test. A test that was still running when its package
// died (a timeout, a crash) counts as failed: go test sends no result for
// it.
//
// It reads the JSON with encoding/json rather than matching go test's text
// output, whose FAIL lines differ between a package ("FAIL\tpkg") and a
// test ("--- FAIL: Test"), and whose failure context a grep cannot
// separate from the passing tests' output around it.
package testreport

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json), with the build
// events that go test adds (build-output, build-fail, keyed by ImportPath).
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string
	FailedBuild string
}

// Counts are top-level tests.
type Counts struct{ Passed, Failed, Skipped int }

func (c Counts) String() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped", c.Passed, c.Failed, c.Skipped)
}

// run is one run of a top-level test and its subtests.
type run struct {
	name   string
	result string          // pass, fail, skip; "" while it runs
	failed map[string]bool // failed subtests
	output []line
}

type line struct{ test, text string }

type pkg struct {
	name    string
	result  string // pass, fail, skip; "" until go test says
	line    string // the package's result line as go test prints it
	build   string // FailedBuild: the import path whose build failed
	own     []string
	runs    []*run
	current map[string]*run // by top-level name: the run under way
}

// Report is what a `go test -json` stream said.
type Report struct {
	pkgs       []*pkg // in the order they first appear
	byName     map[string]*pkg
	builds     map[string][]string // build output by import path
	buildOrder []string
	failBuilds map[string]bool
	stray      []string // lines that are not JSON (go test's stderr)
	status     int
}

// Read parses a `go test -json` stream; lines that are not JSON events
// are kept as they are. A read error is returned with what was read.
func Read(r io.Reader) (*Report, error) {
	rep := &Report{byName: map[string]*pkg{}, builds: map[string][]string{}, failBuilds: map[string]bool{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if b := sc.Bytes(); len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &e) != nil || e.Action == "" {
			rep.stray = append(rep.stray, sc.Text())
			continue
		}
		rep.add(e)
	}
	if err := sc.Err(); err != nil {
		return rep, fmt.Errorf("reading go test -json output: %w", err)
	}
	return rep, nil
}

// SetStatus records go test's exit status: a non-zero status with no
// failure in the JSON (go test could not start, say) still fails.
func (r *Report) SetStatus(status int) { r.status = status }

func (r *Report) add(e event) {
	switch e.Action {
	case "build-output":
		if _, ok := r.builds[e.ImportPath]; !ok {
			r.buildOrder = append(r.buildOrder, e.ImportPath)
		}
		r.builds[e.ImportPath] = append(r.builds[e.ImportPath], e.Output)
		return
	case "build-fail":
		r.failBuilds[e.ImportPath] = true
		return
	}
	if e.Package == "" {
		return
	}
	p := r.byName[e.Package]
	if p == nil {
		p = &pkg{name: e.Package, current: map[string]*run{}}
		r.byName[e.Package] = p
		r.pkgs = append(r.pkgs, p)
	}
	if e.Test == "" {
		p.addOwn(e)
		return
	}
	top, _, sub := strings.Cut(e.Test, "/")
	cur := p.current[top]
	if e.Action == "run" && !sub {
		cur = &run{name: top, failed: map[string]bool{}}
		p.current[top] = cur
		p.runs = append(p.runs, cur)
	}
	if cur == nil {
		return // a test's event before its run: nothing to attach it to
	}
	switch e.Action {
	case "output":
		cur.output = append(cur.output, line{e.Test, e.Output})
	case "pass", "fail", "skip":
		if !sub {
			cur.result = e.Action
		} else if e.Action == "fail" {
			cur.failed[e.Test] = true
		}
	}
}

func (p *pkg) addOwn(e event) {
	switch e.Action {
	case "output":
		if isResultLine(e.Output) {
			p.line = strings.TrimRight(e.Output, "\n")
		} else {
			p.own = append(p.own, e.Output)
		}
	case "pass", "fail", "skip":
		p.result = e.Action
		if e.FailedBuild != "" {
			p.build = e.FailedBuild
		}
	}
}

// isResultLine reports whether s is the line go test prints for a
// package: "ok  \tpkg\t0.1s", "FAIL\tpkg\t0.1s", "FAIL\tpkg [build
// failed]", "?   \tpkg\t[no test files]".
func isResultLine(s string) bool {
	return strings.HasPrefix(s, "ok  \t") || strings.HasPrefix(s, "FAIL\t") || strings.HasPrefix(s, "?   \t")
}

// Counts counts the top-level tests.
func (r *Report) Counts() Counts {
	var c Counts
	for _, p := range r.pkgs {
		for _, t := range p.runs {
			switch t.result {
			case "pass":
				c.Passed++
			case "skip":
				c.Skipped++
			default:
				c.Failed++ // failed, or still running when the stream ended
			}
		}
	}
	return c
}

// Failed reports whether anything failed: a test, a package, a build, or
// go test itself.
func (r *Report) Failed() bool { return r.testsFailed() || r.status != 0 }

// failed: go test said fail, or the stream ended before it said anything.
func (p *pkg) failed() bool { return p.result == "fail" || p.result == "" }
