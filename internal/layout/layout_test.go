// Package layout holds the test of the module's import structure: every
// import points down the data flow (docs/architecture.md, "Packages").
package layout

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/flowmon/flowmon"

// libraries are the structures and their sources: they know nothing of
// the pipeline that joins them, the agent, the evaluations or the command.
var libraries = []string{"capture", "acsm", "kbf", "filters", "rules", "alerts", "bpf", "record", "conferr"}

// above are the folders no library may import.
var above = []string{"pipeline", "agent", "eval", "cmd"}

type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// packages lists the module's packages with their imports, test imports
// included: a test that reaches up ties the folders as much as code does.
func packages(t *testing.T) []pkg {
	t.Helper()
	gobin := os.Getenv("GO")
	if gobin == "" {
		gobin = "go"
	}
	cmd := exec.Command(gobin, "list", "-json=ImportPath,Imports,TestImports,XTestImports", module+"/...")
	cmd.Dir = "../.."
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, errb.String())
	}
	var ps []pkg
	dec := json.NewDecoder(&out)
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	if len(ps) < 20 {
		t.Fatalf("go list found %d packages", len(ps))
	}
	return ps
}

// rel is path within the module, or "" for another module's package.
func rel(path string) string {
	if path == module {
		return "."
	}
	r, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		return ""
	}
	return r
}

func top(r string) string {
	t, _, _ := strings.Cut(r, "/")
	return t
}

// projectImports calls f with each of p's imports within the module,
// its tests' included.
func projectImports(p pkg, f func(imp string)) {
	for _, list := range [][]string{p.Imports, p.TestImports, p.XTestImports} {
		for _, imp := range list {
			if r := rel(imp); r != "" && r != rel(p.ImportPath) {
				f(r)
			}
		}
	}
}

// TestInternalIsLeaves: a package under internal/ imports no project
// package outside internal/ (tests included), so the helpers stay below
// everything that uses them.
func TestInternalIsLeaves(t *testing.T) {
	for _, p := range packages(t) {
		from := rel(p.ImportPath)
		if top(from) != "internal" {
			continue
		}
		projectImports(p, func(imp string) {
			if top(imp) != "internal" {
				t.Errorf("%s imports %s: internal/ holds leaves only", from, imp)
			}
		})
	}
}

// TestLibrariesImportNoAgent: the structures and sources import neither
// the pipeline, the agent, the evaluations nor the command.
func TestLibrariesImportNoAgent(t *testing.T) {
	for _, p := range packages(t) {
		from := rel(p.ImportPath)
		if !slices.Contains(libraries, top(from)) {
			continue
		}
		projectImports(p, func(imp string) {
			if slices.Contains(above, top(imp)) {
				t.Errorf("%s imports %s: a library imports nothing above it", from, imp)
			}
		})
	}
}

// TestNoCycleBetweenFolders: the top-level folders' imports (code, not
// tests, which may reach sideways for fixtures) form no cycle.
func TestNoCycleBetweenFolders(t *testing.T) {
	edges := map[string]map[string]bool{}
	for _, p := range packages(t) {
		from := top(rel(p.ImportPath))
		for _, imp := range p.Imports {
			if r := rel(imp); r != "" && top(r) != from {
				if edges[from] == nil {
					edges[from] = map[string]bool{}
				}
				edges[from][top(r)] = true
			}
		}
	}
	// Depth-first search; a folder met again on the path closes a cycle.
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(n string)
	visit = func(n string) {
		state[n] = onPath
		path = append(path, n)
		var next []string
		for m := range edges[n] {
			next = append(next, m)
		}
		slices.Sort(next)
		for _, m := range next {
			switch state[m] {
			case onPath:
				i := slices.Index(path, m)
				t.Errorf("import cycle between folders: %s -> %s", strings.Join(path[i:], " -> "), m)
			case unseen:
				visit(m)
			}
		}
		path = path[:len(path)-1]
		state[n] = done
	}
	var folders []string
	for n := range edges {
		folders = append(folders, n)
	}
	slices.Sort(folders)
	for _, n := range folders {
		if state[n] == unseen {
			visit(n)
		}
	}
}
