package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

func init() {
	commands["hash-password"] = command{
		summary: "print the bcrypt hash of a password read from stdin, for the web config's basic_auth_users",
		run:     runHashPassword,
	}
}

// stdin is where hash-password reads; tests set it.
var stdin io.Reader = os.Stdin

// runHashPassword reads a password, the first line of stdin (never an
// argument, which ps and the shell's history would show), and prints
// its bcrypt hash, as exporter-toolkit's basic_auth_users wants it.
func runHashPassword(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("hash-password", "[flags] < FILE", stderr,
		"\nReads a password from the first line of stdin and prints its bcrypt hash for the web config file's",
		"basic_auth_users (docs/run.md, Securing the listener). E.g.: read -rs p; echo \"$p\" | flowmon hash-password")
	cost := fs.Int("cost", bcrypt.DefaultCost, "bcrypt's `cost`, 4 to 31: each step doubles the time a check takes")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(fs, "takes no arguments: the password comes on stdin, not on the command line")
	}
	if *cost < bcrypt.MinCost || *cost > bcrypt.MaxCost {
		return usageError(fs, "--cost %d: must be from %d to %d", *cost, bcrypt.MinCost, bcrypt.MaxCost)
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read the password: %w", err)
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return exitWith(2, errors.New("no password on stdin"))
	}
	h, err := bcrypt.GenerateFromPassword([]byte(pw), *cost)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", h)
	return err
}
