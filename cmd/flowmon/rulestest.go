package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/flowmon/flowmon/agent"
)

// rulesTest runs each rules test file (agent.RunRuleTests), printing
// each test's result; a file that cannot run is said on stderr.
func rulesTest(files []string, stdout, stderr io.Writer) error {
	failed := 0
	for _, f := range files {
		res, err := agent.RunRuleTests(f)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", f, err)
			failed++
			continue
		}
		for _, r := range res {
			switch {
			case r.Err != nil:
				fmt.Fprintf(stdout, "FAIL %s: %s: %v\n", f, r.Name, r.Err)
				failed++
			case len(r.Diffs) > 0:
				fmt.Fprintf(stdout, "FAIL %s: %s:\n  %s\n", f, r.Name, strings.Join(r.Diffs, "\n  "))
				failed++
			default:
				fmt.Fprintf(stdout, "ok   %s: %s\n", f, r.Name)
			}
		}
	}
	if failed > 0 {
		return exitWith(1, errors.New(plural(failed, "test")+" failed"))
	}
	return nil
}
