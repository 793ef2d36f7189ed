package alerts

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// newFileSink returns a sink appending alerts to the file at path, one a
// line in format f. When maxSize > 0, a file that would grow beyond
// maxSize bytes is rotated first: path.1 becomes path.2 and so on up to
// path.<maxFiles> (the oldest is overwritten), path becomes path.1, and a
// new path is started. A line longer than maxSize gets a file of its own.
// The file is opened here, so that a path that cannot be written is a
// configuration error and not a queue of retries.
func newFileSink(name, path string, maxSize int64, maxFiles int, f Format, o queueOptions) (Sink, error) {
	t := &fileTarget{path: path, maxSize: maxSize, maxFiles: max(maxFiles, 1), format: f}
	if err := t.open(); err != nil {
		return nil, err
	}
	o.maxBatch = writeBatch
	return newQueueSink(name, t, o), nil
}

type fileTarget struct {
	path     string
	maxSize  int64
	maxFiles int
	format   Format

	f     *os.File // nil after a failure: reopened at the next attempt
	size  int64    // of the open file
	lines lines
}

func (t *fileTarget) open() error {
	f, err := os.OpenFile(t.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("opening alert file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("opening alert file: %w", err)
	}
	t.f, t.size = f, fi.Size()
	return nil
}

func (t *fileTarget) deliver(_ context.Context, batch []Alert) (int, error) {
	if t.f == nil {
		if err := t.open(); err != nil {
			return 0, err
		}
	}
	t.lines.encode(t.format, batch)
	done, start := 0, 0 // alerts written, and the bytes they took
	for done < len(batch) {
		k := len(batch)
		if t.maxSize > 0 {
			k = done
			for k < len(batch) && t.size+int64(t.lines.ends[k]-start) <= t.maxSize {
				k++
			}
			if k == done && t.size > 0 {
				if err := t.rotate(); err != nil {
					return done, err
				}
				continue
			}
			k = max(k, done+1)
		}
		n, err := t.f.Write(t.lines.buf[start:t.lines.ends[k-1]])
		t.size += int64(n)
		if err != nil {
			t.f.Close()
			t.f = nil
			return t.lines.complete(start + n), fmt.Errorf("writing alert file: %w", err)
		}
		done, start = k, t.lines.ends[k-1]
	}
	return done, nil
}

// rotate shifts path.i to path.i+1, path to path.1, and opens a new path.
// Any step that fails leaves the file closed, to be retried.
func (t *fileTarget) rotate() error {
	err := t.f.Close()
	t.f = nil
	if err != nil {
		return fmt.Errorf("rotating alert file: %w", err)
	}
	for i := t.maxFiles - 1; i >= 1; i-- {
		err := os.Rename(fmt.Sprintf("%s.%d", t.path, i), fmt.Sprintf("%s.%d", t.path, i+1))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rotating alert file: %w", err)
		}
	}
	if err := os.Rename(t.path, t.path+".1"); err != nil {
		return fmt.Errorf("rotating alert file: %w", err)
	}
	return t.open()
}

func (t *fileTarget) close() error {
	if t.f == nil {
		return nil
	}
	err := errors.Join(t.f.Sync(), t.f.Close())
	t.f = nil
	if err != nil {
		return fmt.Errorf("closing alert file: %w", err)
	}
	return nil
}
