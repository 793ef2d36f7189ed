package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

// output is where a command writes: a file an -o or --flows-out flag
// names, or stdout for "-" (and for "" when stdout is the default).
type output struct {
	io.Writer
	f *os.File
}

// createOutput opens name for writing; "-" is stdout.
func createOutput(name string, stdout io.Writer) (*output, error) {
	if name == "-" {
		return &output{Writer: stdout}, nil
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	return &output{Writer: f, f: f}, nil
}

// Close closes the file (not stdout), reporting a failed last write: a
// full disk shows up here, not in the writes buffered before it.
func (o *output) Close() error {
	if o.f == nil {
		return nil
	}
	if err := o.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", o.f.Name(), err)
	}
	return nil
}

// outFlag defines -o, every command's one name for where its main output
// goes.
func outFlag(fs *flag.FlagSet) *string {
	return fs.String("o", "-", "write the output to `FILE` (- for stdout)")
}
