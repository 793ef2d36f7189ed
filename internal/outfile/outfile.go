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

// AppendLines opens name, a file of lines, to append to, creating it if
// there is none; "-" is stdout. A last line without its newline, which a
// process stopped in the middle of a write leaves, is cut first, so that
// every line of the file is whole: cut is how many bytes went.
func AppendLines(name string, stdout io.Writer) (_ *File, cut int64, err error) {
	if name == "-" {
		return &File{Writer: stdout}, 0, nil
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0, err
	}
	if cut, err = cutPartialLine(f); err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("repair %s: %w", name, err)
	}
	return &File{Writer: f, f: f}, cut, nil
}

// cutPartialLine truncates f after its last newline, reading back from its
// end a block at a time.
func cutPartialLine(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return 0, err
	}
	size := st.Size()
	var buf [4096]byte
	end := size
	for end > 0 {
		n := min(end, int64(len(buf)))
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return 0, err
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] == '\n' {
				keep := end - n + i + 1
				if keep == size {
					return 0, nil
				}
				return size - keep, f.Truncate(keep)
			}
		}
		end -= n
	}
	return size, f.Truncate(0)
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
