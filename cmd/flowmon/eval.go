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
	if len(args) == 0 {
		fmt.Fprintf(stderr, "usage: flowmon eval NAME [flags]\n\nevaluations:\n")
		for _, n := range names {
			fmt.Fprintf(stderr, "  %-6s %s\n", n, evals[n].summary)
		}
		return errUsage
	}
	e, ok := evals[args[0]]
	if !ok {
		return fmt.Errorf("unknown evaluation %q (have %s)", args[0], strings.Join(names, ", "))
	}
	return e.run(args[1:], stdout, stderr)
}
