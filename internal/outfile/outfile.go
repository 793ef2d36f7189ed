// Package outfile opens where a command or the agent writes an output a
// flag names: a file, or stdout for "-".
package outfile

import (
	"fmt"
	"io"
	"os"
)

// File is an output: a file created for it, or stdout.
type File struct {
	io.Writer
	f *os.File
}

// Create opens name for writing; "-" is stdout.
func Create(name string, stdout io.Writer) (*File, error) {
	if name == "-" {
		return &File{Writer: stdout}, nil
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	return &File{Writer: f, f: f}, nil
}

// Close closes the file (not stdout), reporting a failed last write: a
// full disk shows up here, not in the writes buffered before it.
func (o *File) Close() error {
	if o.f == nil {
		return nil
	}
	if err := o.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", o.f.Name(), err)
	}
	return nil
}
