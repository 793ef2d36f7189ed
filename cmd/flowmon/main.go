// Command flowmon is a network traffic monitoring agent: it replays pcap
// files or captures live traffic, tracks every flow's TCP state in constant
// memory, and exports what it sees as summaries, alerts and metrics.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
)

// command is one subcommand: run gets the arguments after its name.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

// commands is filled by each subcommand's file in its init function, so a
// subcommand lives in one file and adding one touches nothing else.
var commands = map[string]command{}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "flowmon: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	if err := cmd.run(args[1:], stdout, stderr); err != nil {
		if err == errUsage {
			return 2
		}
		fmt.Fprintf(stderr, "flowmon %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// errUsage is returned by a subcommand whose flags were wrong; the flag
// package has already printed why.
var errUsage = fmt.Errorf("usage")

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: flowmon COMMAND [flags] [args]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
}
