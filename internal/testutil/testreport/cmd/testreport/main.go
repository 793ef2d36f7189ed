// Command testreport reads `go test -json` output on stdin and prints the
// summary of package testreport; scripts/test.sh runs it. It exits 1 when
// anything failed.
//
//	go test -json ./... 2>&1 | testreport -status $?
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/flowmon/flowmon/internal/testutil/testreport"
)

func main() {
	status := flag.Int("status", 0, "go test's exit status: non-zero fails the report even when the JSON shows no failure")
	flag.Parse()
	rep, err := testreport.Read(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	rep.SetStatus(*status)
	if err := rep.Write(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	if rep.Failed() {
		os.Exit(1)
	}
}
