package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/flowmon/flowmon/agent"
)

func init() {
	commands["version"] = command{
		summary: "print the version, the VCS revision and the Go version of this build",
		run:     runVersion,
	}
}

// runVersion prints what flowmon_build_info says of the build, on one
// line, as `prometheus --version` does on its first.
func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", "", stderr, "\nPrints the build's version, VCS revision and Go version (flowmon_build_info's labels).")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "takes no arguments (have %q)", fs.Args())
	}
	b := agent.Build()
	rev := b.Revision
	if b.Modified {
		rev += " (modified)"
	}
	_, err := fmt.Fprintf(stdout, "flowmon version %s, revision %s, %s %s/%s\n", b.Version, rev, b.GoVersion, runtime.GOOS, runtime.GOARCH)
	return err
}
