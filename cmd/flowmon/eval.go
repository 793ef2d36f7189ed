package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// evaluation reproduces one paper's experiments and prints a markdown table.
type evaluation struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

// evals is filled by each eval_*.go file in its init function.
var evals = map[string]evaluation{}

func init() {
	commands["eval"] = command{
		summary: "reproduce a paper's experiments as a markdown table (eval NAME -h)",
		run:     runEval,
	}
}

func runEval(args []string, stdout, stderr io.Writer) error {
	names := make([]string, 0, len(evals))
	for n := range evals {
		names = append(names, n)
	}
	sort.Strings(names)
	list := func(w io.Writer) {
		fmt.Fprintf(w, "usage: flowmon eval NAME [flags]\n\nevaluations:\n")
		for _, n := range names {
			fmt.Fprintf(w, "  %-7s %s\n", n, evals[n].summary)
		}
		fmt.Fprintln(w, "\n`flowmon eval NAME -h` prints an evaluation's flags; -o FILE writes its table to FILE.")
	}
	if len(args) == 0 {
		list(stderr)
		return errUsage
	}
	if a := args[0]; a == "-h" || a == "-help" || a == "--help" {
		list(stderr)
		return errHelp
	}
	e, ok := evals[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "flowmon eval: unknown evaluation %q (have %s)\n", args[0], strings.Join(names, ", "))
		return errUsage
	}
	return e.run(args[1:], stdout, stderr)
}
