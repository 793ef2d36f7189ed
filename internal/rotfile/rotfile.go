package rotfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Options say when a File rotates. Zero MaxSize and MaxAge never rotate
// by that criterion.
type Options struct {
	MaxSize  int64         // bytes a file may hold; 0: no limit
	MaxAge   time.Duration // how long a file is written to; 0: no limit
	MaxFiles int           // rotated files kept, path.1 ... path.MaxFiles; below 1 is 1
	Mode     fs.FileMode   // of the files created; 0 is 0o640

	now func() time.Time // the clock of the age; time.Now if nil (tests set it)
}

// DefaultMode is the mode of the files when Options.Mode is 0: the
// agent's group may read them.
const DefaultMode fs.FileMode = 0o640

func (o Options) withDefaults() Options {
	o.MaxFiles = max(o.MaxFiles, 1)
	if o.Mode == 0 {
		o.Mode = DefaultMode
	}
	if o.now == nil {
		o.now = time.Now
	}
	return o
}

// File is a log of lines at a path, rotated as its Options say.
type File struct {
	path string
	o    Options

	f     *os.File  // nil after a failure: reopened at the next Write
	size  int64     // of the open file
	start time.Time // when the open file was started
	id    fileID    // of the open file
	// dirty says a file was created since the directory was last synced.
	dirty bool
}

// Open opens path to append to, creating it with o.Mode, after cutting a
// last line without its newline: cut is how many bytes went.
func Open(path string, o Options) (_ *File, cut int64, err error) {
	w := &File{path: path, o: o.withDefaults(), dirty: true}
	if cut, err = w.open(); err != nil {
		return nil, 0, err
	}
	return w, cut, nil
}

// open opens path, cuts its partial last line and notes its size,
// identity and start (kept if it is the file open before).
func (w *File) open() (int64, error) {
	f, err := os.OpenFile(w.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, w.o.Mode)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", w.path, err)
	}
	cut, err := cutPartialLine(f)
	if err != nil {
		f.Close()
		return 0, fmt.Errorf("repair %s: %w", w.path, err)
	}
	st, err := statFile(f)
	if err != nil {
		f.Close()
		return 0, fmt.Errorf("open %s: %w", w.path, err)
	}
	if st.id != w.id || w.start.IsZero() {
		w.start = w.o.now()
		if b := time.Unix(0, st.id.born); st.id.born != 0 && b.Before(w.start) {
			w.start = b
		}
	}
	w.f, w.size, w.id = f, st.size, st.id
	return cut, nil
}

// create starts a new path after a rotation.
func (w *File) create() error {
	w.dirty = true
	f, err := os.OpenFile(w.path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, w.o.Mode)
	if err != nil {
		return fmt.Errorf("rotate %s: %w", w.path, err)
	}
	st, err := statFile(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("rotate %s: %w", w.path, err)
	}
	w.f, w.size, w.id, w.start = f, 0, st.id, w.o.now()
	return nil
}

// Write appends p, whole lines, rotating first where the Options say:
// the lines that fit in the current file go there, the rest to the next.
// On an error, the file the error came from is truncated back to where
// it ended before (whole lines only) and closed, to be reopened at the
// next Write; n is then the bytes of p written whole to files before
// it, whole lines, 0 unless p spanned a rotation.
func (w *File) Write(p []byte) (n int, err error) {
	if w.f == nil {
		if _, err := w.open(); err != nil {
			return 0, err
		}
	}
	for n < len(p) {
		rest := p[n:]
		if w.size == 0 {
			w.start = w.o.now() // an empty file starts with its first line
		} else if w.o.MaxAge > 0 && w.o.now().Sub(w.start) >= w.o.MaxAge {
			if err := w.rotate(); err != nil {
				return n, err
			}
		}
		k := len(rest)
		if w.o.MaxSize > 0 && w.size+int64(k) > w.o.MaxSize {
			k = fit(rest, w.o.MaxSize-w.size)
			if k == 0 {
				if w.size > 0 {
					if err := w.rotate(); err != nil {
						return n, err
					}
					continue
				}
				// A line longer than MaxSize: a file of its own.
				if k = bytes.IndexByte(rest, '\n') + 1; k == 0 {
					k = len(rest)
				}
			}
		}
		if err := w.append(rest[:k]); err != nil {
			return n, err
		}
		n += k
	}
	return n, nil
}

// fit returns the length of the longest run of p's first lines that
// holds at most room bytes.
func fit(p []byte, room int64) int {
	if room <= 0 {
		return 0
	}
	return bytes.LastIndexByte(p[:min(int64(len(p)), room)], '\n') + 1
}

// append writes p to the open file, or leaves the file as it was and
// closes it.
func (w *File) append(p []byte) error {
	m, err := w.f.Write(p)
	if err == nil && m < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		if m > 0 {
			// Best effort: a truncate that fails too leaves a partial
			// line, which the reopen at the next Write cuts.
			_ = w.f.Truncate(w.size)
		}
		w.f.Close()
		w.f = nil
		return err // an *os.PathError, naming the file
	}
	w.size += int64(m)
	return nil
}

// rotate closes the file, shifts the rotated files up and path to
// path.1, and starts a new path. A step that fails leaves the File
// closed, and the next Write tries the rotation again.
func (w *File) rotate() error {
	err := w.f.Close()
	w.f = nil
	if err != nil {
		return fmt.Errorf("rotate %s: %w", w.path, err)
	}
	if err := shift(w.path, w.o.MaxFiles); err != nil {
		return fmt.Errorf("rotate %s: %w", w.path, err)
	}
	return w.create()
}

// shift renames path to path.1, first moving path.1 ... up to the first
// free number, or to path.max, which it replaces.
func shift(path string, max int) error {
	free := max
	for i := 1; i < max; i++ {
		if _, err := os.Lstat(numbered(path, i)); errors.Is(err, fs.ErrNotExist) {
			free = i
			break
		} else if err != nil {
			return err
		}
	}
	for i := free - 1; i >= 1; i-- {
		if err := os.Rename(numbered(path, i), numbered(path, i+1)); err != nil {
			return err
		}
	}
	return os.Rename(path, numbered(path, 1))
}

// numbered is path.i; path itself for 0.
func numbered(path string, i int) string {
	if i == 0 {
		return path
	}
	return fmt.Sprintf("%s.%d", path, i)
}

// Sync commits the open file to disk, and the directory too after a
// file was created in it.
func (w *File) Sync() error {
	if w.f == nil {
		if _, err := w.open(); err != nil {
			return err
		}
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", w.path, err)
	}
	if w.dirty {
		if err := syncDir(filepath.Dir(w.path)); err != nil {
			return fmt.Errorf("sync %s: %w", w.path, err)
		}
		w.dirty = false
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// Close syncs and closes the file.
func (w *File) Close() error {
	if w.f == nil {
		return nil
	}
	err := errors.Join(w.f.Sync(), w.f.Close())
	w.f = nil
	if err != nil {
		return fmt.Errorf("close %s: %w", w.path, err)
	}
	return nil
}

// cutPartialLine truncates f, a file of lines, after its last newline,
// reading back from its end a block at a time, and returns how many
// bytes went. A file that is not a regular one is left alone.
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
