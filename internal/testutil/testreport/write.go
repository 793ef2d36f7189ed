package testreport

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// MaxLines caps each failure's excerpt: a crash in a test with many
// goroutines prints thousands of lines of stacks, and the first ones say
// what happened.
const MaxLines = 300

// Write prints the package lines, then (when something failed) the
// failures, and last the counts line.
func (r *Report) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, p := range r.pkgs {
		fmt.Fprintln(bw, p.resultLine())
	}
	if r.Failed() {
		fmt.Fprintf(bw, "\nfailures:\n")
		r.writeFailures(bw)
	}
	fmt.Fprintln(bw, r.Counts())
	return bw.Flush()
}

// resultLine is go test's line for the package, or one in its form when
// the stream ended without it.
func (p *pkg) resultLine() string {
	switch {
	case p.line != "":
		return p.line
	case p.result == "":
		return "FAIL\t" + p.name + " [no result: go test stopped]"
	case p.result == "skip":
		return "?   \t" + p.name + "\t[no test files]"
	case p.result == "pass":
		return "ok  \t" + p.name
	}
	return "FAIL\t" + p.name
}

func (r *Report) writeFailures(w io.Writer) {
	for _, path := range r.buildOrder {
		if r.failBuilds[path] {
			block(w, "build "+path, r.builds[path])
		}
	}
	for _, p := range r.pkgs {
		if !p.failed() {
			continue
		}
		for _, t := range p.runs {
			if t.result == "fail" || t.result == "" {
				block(w, p.name+" "+t.name, t.failedOutput())
			}
		}
		if own := p.ownFailure(); len(own) > 0 {
			block(w, p.name+" (outside any test)", own)
		}
	}
	if len(r.stray) > 0 {
		block(w, "go test's other output", withNewlines(r.stray))
	}
	if r.status != 0 && !r.testsFailed() {
		fmt.Fprintf(w, "go test exited with status %d\n\n", r.status)
	}
}

// testsFailed reports whether the JSON itself shows a failure.
func (r *Report) testsFailed() bool {
	for _, p := range r.pkgs {
		if p.failed() {
			return true
		}
	}
	return len(r.failBuilds) > 0
}

// failedOutput is the output of the test itself and of its failed
// subtests, without the "=== RUN"-style framing lines.
func (t *run) failedOutput() []string {
	var out []string
	for _, l := range t.output {
		if (l.test == t.name || t.failed[l.test]) && !strings.HasPrefix(l.text, "=== ") {
			out = append(out, l.text)
		}
	}
	return out
}

// ownFailure is the package's output outside its tests, less the bare
// PASS/FAIL that ends every test binary's run: what remains explains a
// package that died outside a test.
func (p *pkg) ownFailure() []string {
	var out []string
	for _, s := range p.own {
		if t := strings.TrimSpace(s); t != "FAIL" && t != "PASS" && t != "" {
			out = append(out, s)
		} else if t == "" && len(out) > 0 {
			out = append(out, s) // a blank line inside a stack trace
		}
	}
	return out
}

// block prints a titled excerpt. Its pieces are event outputs, which end
// in a newline except where go test split a long line.
func block(w io.Writer, title string, text []string) {
	fmt.Fprintf(w, ">>> %s\n", title)
	for i, s := range text {
		if i == MaxLines {
			fmt.Fprintf(w, "\n[%d more lines]", len(text)-i)
			break
		}
		_, _ = io.WriteString(w, s)
	}
	if n := len(text); n > 0 && n <= MaxLines && !strings.HasSuffix(text[n-1], "\n") || n > MaxLines {
		_, _ = io.WriteString(w, "\n")
	}
	fmt.Fprintln(w)
}

func withNewlines(lines []string) []string {
	out := make([]string, len(lines))
	for i, s := range lines {
		out[i] = s + "\n"
	}
	return out
}
