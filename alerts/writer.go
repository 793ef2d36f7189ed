package alerts

import (
	"context"
	"io"
	"maps"
	"slices"

	"github.com/flowmon/flowmon/internal/health"
)

// queueSink is a Sink of one queue: the writer, file and webhook sinks.
type queueSink struct {
	name string
	q    *queue
}

func newQueueSink(name string, t target, o queueOptions) *queueSink {
	return &queueSink{name: name, q: newQueue(name, t, o)}
}

func (s *queueSink) Name() string                    { return s.name }
func (s *queueSink) Send(a Alert) bool               { return s.q.push(cloneAlert(a)) }
func (s *queueSink) Close(ctx context.Context) error { return s.q.close(ctx) }
func (s *queueSink) Stats() SinkStats                { return s.q.stats() }
func (s *queueSink) Health() []*health.Component     { return []*health.Component{s.q.health} }

// cloneAlert returns a with its own labels and annotations, so that the
// caller may reuse its own while the alert waits in a queue.
func cloneAlert(a Alert) Alert {
	a.Labels = slices.Clone(a.Labels)
	a.Annotations = maps.Clone(a.Annotations)
	return a
}

// NewWriterSink returns a sink that writes each alert to w as one line in
// format f (JSON lines, or AppendText's form), with the default queue and
// backoff. A batch of queued alerts is one Write, so lines from several
// goroutines writing to w do not interleave; a failed Write is retried
// from the first line it did not complete. Close does not close w, and it
// cannot interrupt a Write that blocks.
func NewWriterSink(name string, w io.Writer, f Format) Sink {
	return newWriterSink(name, w, f, queueOptions{})
}

// NewWriterSinkQueue is NewWriterSink with a queue of size alerts
// (1..MaxQueue), for writers that keep up but see bursts: a replay's
// stderr or alert file, which a trace can flood with thousands of alerts
// in a moment.
func NewWriterSinkQueue(name string, w io.Writer, f Format, size int) Sink {
	return newWriterSink(name, w, f, queueOptions{size: min(max(size, 1), MaxQueue)})
}

func newWriterSink(name string, w io.Writer, f Format, o queueOptions) Sink {
	o.maxBatch = writeBatch
	return newQueueSink(name, &writerTarget{w: w, format: f}, o)
}

// writeBatch is how many alerts a writer or file sink writes at once.
const writeBatch = 64

type writerTarget struct {
	w      io.Writer
	format Format
	lines  lines
}

func (t *writerTarget) deliver(_ context.Context, batch []Alert) (int, error) {
	t.lines.encode(t.format, batch)
	n, err := t.w.Write(t.lines.buf)
	return t.lines.complete(n), err
}

func (t *writerTarget) close() error { return nil }

// lines is a batch of alerts encoded one a line, with where each ends.
type lines struct {
	buf  []byte
	ends []int
}

func (l *lines) encode(f Format, batch []Alert) {
	l.buf, l.ends = l.buf[:0], l.ends[:0]
	for i := range batch {
		l.buf = f.appendLine(l.buf, &batch[i])
		l.ends = append(l.ends, len(l.buf))
	}
}

// complete returns how many lines the first n bytes of buf hold whole.
func (l *lines) complete(n int) int {
	k := 0
	for k < len(l.ends) && l.ends[k] <= n {
		k++
	}
	return k
}
