// Package outfile opens where a command or the agent writes an output a
// flag names: a file, or stdout for "-".
package outfile

import (
	"fmt"
	"io"
	"os"

	"github.com/flowmon/flowmon/internal/lockfile"
)

// File is an output: a file created for it, or stdout.
type File struct {
	io.Writer
	f *os.File
}

// Create opens name for writing, emptied; "-" is stdout. A regular file
// is locked (lockfile.Lock) before it is emptied and while it is open,
// so that a second command writing the same file fails with a
// lockfile.HeldError and the first one's output stays whole.
func Create(name string, stdout io.Writer) (*File, error) {
	if name == "-" {
		return &File{Writer: stdout}, nil
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		if err := lockfile.Lock(f, name); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, err
		}
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
