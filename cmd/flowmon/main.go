// Command flowmon is a network traffic monitoring agent: it replays pcap
// files or captures live traffic, tracks every flow's TCP state in constant
// memory, and exports what it sees as summaries, alerts and metrics.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/flowmon/flowmon/internal/lockfile"
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
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return 0
	case "help":
		if len(args) == 1 {
			usage(stdout)
			return 0
		}
		// `flowmon help CMD` is `flowmon CMD -h` with the usage on stdout.
		args = []string{args[1], "-h"}
		stderr = stdout
	}
	if wantsHelp(args[1:]) {
		stderr = stdout // the usage asked for is output, as help CMD's
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "flowmon: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	err := cmd.run(args[1:], stdout, stderr)
	var st *exitStatus
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.As(err, &st):
		if st.err != nil {
			fmt.Fprintf(stderr, "flowmon %s: %v\n", args[0], st.err)
		}
		return st.code
	case errors.Is(err, lockfile.ErrHeld):
		// Another flowmon writes the file: settings to change, as a
		// port already taken is, before anything was written.
		fmt.Fprintf(stderr, "flowmon %s: %v\n", args[0], err)
		return 2
	}
	fmt.Fprintf(stderr, "flowmon %s: %v\n", args[0], err)
	return 1
}

// wantsHelp says whether a command's arguments ask for its usage (-h,
// -help or --help before any "--").
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// errUsage is returned by a subcommand whose flags or arguments were wrong,
// after it has printed why (exit status 2).
var errUsage = errors.New("usage")

// errHelp is returned by a subcommand asked for its usage with -h, which
// it has printed (exit status 0).
var errHelp = errors.New("help")

// exitStatus ends a command with an exit status other than 0, 1 or 2's
// usage meaning (diff exits 1 when the sides differ and 2 on trouble, as
// diff(1) does); err, when set, is printed first.
type exitStatus struct {
	code int
	err  error
}

func (e *exitStatus) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	return fmt.Sprintf("exit status %d", e.code)
}

func (e *exitStatus) Unwrap() error { return e.err }

// exitWith returns an error that makes run print err (when non-nil) and
// exit with code.
func exitWith(code int, err error) error { return &exitStatus{code: code, err: err} }

// newFlagSet returns a flag set for `flowmon NAME` whose usage is the line
// "usage: flowmon NAME ARGS", then summary lines, then the flags.
func newFlagSet(name, args string, stderr io.Writer, extra ...string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: flowmon %s %s\n", name, args)
		for _, l := range extra {
			fmt.Fprintln(stderr, l)
		}
		fmt.Fprintln(stderr, "\nflags:")
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args into fs: errHelp for -h (usage printed), errUsage
// for a bad flag (the flag package has said which, and a line says where
// the usage is: the whole of it would bury the one line that matters).
// Flags may come after the arguments too (`replay FILE --workers 1`,
// `rules check --help`), as in most commands people type; "--" ends the
// flags. fs.Args() is the arguments, in order.
func parseFlags(fs *flag.FlagSet, args []string) error {
	full := fs.Usage
	fs.Usage = func() {}
	var rest []string
	var err error
	for {
		if err = fs.Parse(args); err != nil || fs.NArg() == 0 {
			break
		}
		left := fs.Args()
		if used := len(args) - len(left); used > 0 && args[used-1] == "--" {
			rest = append(rest, left...) // after "--", arguments only
			break
		}
		rest, args = append(rest, left[0]), left[1:]
	}
	fs.Usage = full
	switch {
	case errors.Is(err, flag.ErrHelp):
		full()
		return errHelp
	case err != nil:
		fmt.Fprintf(fs.Output(), "run 'flowmon help %s' for usage\n", fs.Name())
		return errUsage
	}
	// Parsing "--" and the arguments sets fs.Args() to them, and no flag.
	return fs.Parse(append([]string{"--"}, rest...))
}

// usageError prints "flowmon NAME: msg" to the flag set's output (stderr)
// and returns errUsage (exit status 2, nothing on stdout). The whole usage
// is not printed: it would bury the one line that matters.
func usageError(fs *flag.FlagSet, format string, a ...any) error {
	fmt.Fprintf(fs.Output(), "flowmon %s: %s\n", fs.Name(), fmt.Sprintf(format, a...))
	return errUsage
}

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
	fmt.Fprintln(w, "\n`flowmon help COMMAND` or `flowmon COMMAND -h` prints a command's usage.")
}
