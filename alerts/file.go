package alerts

import (
	"context"
	"fmt"

	"github.com/flowmon/flowmon/internal/rotfile"
)

// newFileSink returns a sink appending alerts to the file at path, one a
// line in format f, rotated as r says (rotfile: path.1 ...
// path.<r.MaxFiles>; a line longer than r.MaxSize gets a file of its
// own). The file is opened here, so that a path that cannot be written
// is a configuration error and not a queue of retries; a partial last
// line a crash left is cut then.
func newFileSink(name, path string, r rotfile.Options, f Format, o queueOptions) (Sink, error) {
	w, cut, err := rotfile.Open(path, r)
	if err != nil {
		return nil, fmt.Errorf("opening alert file: %w", err)
	}
	if cut > 0 && o.log != nil {
		o.log.Warn("alert file: cut its partial last line (a run stopped in the middle of a write)", "sink", name, "file", path, "bytes", cut)
	}
	o.maxBatch = writeBatch
	return newQueueSink(name, &fileTarget{w: w, format: f}, o), nil
}

type fileTarget struct {
	w      *rotfile.File
	format Format
	lines  lines
}

// deliver writes the batch in one Write: on an error the file keeps the
// whole lines written before it (in files rotated within the Write), and
// rotfile has cut the rest off, so the alerts not counted are retried
// without any being written twice.
func (t *fileTarget) deliver(_ context.Context, batch []Alert) (int, error) {
	t.lines.encode(t.format, batch)
	n, err := t.w.Write(t.lines.buf)
	if err != nil {
		return t.lines.complete(n), fmt.Errorf("writing alert file: %w", err)
	}
	return len(batch), nil
}

func (t *fileTarget) close() error {
	if err := t.w.Close(); err != nil {
		return fmt.Errorf("closing alert file: %w", err)
	}
	return nil
}
