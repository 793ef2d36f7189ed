package alerts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowmon/flowmon/internal/health"
	"github.com/flowmon/flowmon/internal/testutil/syncbuf"
)

// waitFor polls cond until it holds, failing the test after a deadline
// generous enough for a loaded machine: the tests assert what happens,
// never how fast.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// seqAlert is alert number i, told apart by its "seq" label.
func seqAlert(i int) Alert {
	a := synFlood()
	a.Labels = Labels{{"alertname", "SYNFlood"}, {"seq", fmt.Sprint(i)}}
	return a
}

// fastRetry makes retries quick in tests.
var fastRetry = queueOptions{minBackoff: time.Millisecond, maxBackoff: 20 * time.Millisecond}

// sendAll sends alerts from..to-1 and fails the test if Send blocks (the
// caller is on a packet path); it returns how many were accepted.
func sendAll(t *testing.T, s Sink, from, to int) int {
	t.Helper()
	accepted := make(chan int)
	go func() {
		n := 0
		for i := from; i < to; i++ {
			if s.Send(seqAlert(i)) {
				n++
			}
		}
		accepted <- n
	}()
	select {
	case n := <-accepted:
		return n
	case <-time.After(30 * time.Second):
		t.Fatal("Send blocked")
		return 0
	}
}

// syncBuffer is the buffer the test reads while goroutines write it.
type syncBuffer = syncbuf.Buffer

// wantSeqLines checks that out is the lines of alerts from..to-1 in
// format f, in order, each once.
func wantSeqLines(t *testing.T, out string, f Format, from, to int) {
	t.Helper()
	var want []byte
	for i := from; i < to; i++ {
		a := seqAlert(i)
		want = f.appendLine(want, &a)
	}
	if out != string(want) {
		t.Errorf("got %d bytes:\n%.2000s\nwant %d bytes:\n%.2000s", len(out), out, len(want), want)
	}
}

func TestWriterSink(t *testing.T) {
	for _, f := range []Format{FormatJSON, FormatText} {
		t.Run(f.String(), func(t *testing.T) {
			var out syncBuffer
			s := NewWriterSink("console", &out, f)
			if s.Name() != "console" {
				t.Errorf("Name() = %q", s.Name())
			}
			if n := sendAll(t, s, 0, 500); n != 500 {
				t.Fatalf("accepted %d of 500", n)
			}
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			wantSeqLines(t, out.String(), f, 0, 500)
			if st := s.Stats(); st != (SinkStats{Sent: 500}) {
				t.Errorf("stats %+v", st)
			}
			// Close twice is fine; Send after Close drops.
			if err := s.Close(context.Background()); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if s.Send(seqAlert(0)) || s.Stats().Dropped != 1 {
				t.Errorf("Send after Close: stats %+v", s.Stats())
			}
		})
	}
}

// TestSendCopies: the caller may reuse its labels and annotations as soon
// as Send returns.
func TestSendCopies(t *testing.T) {
	gate := make(chan struct{})
	var out syncBuffer
	s := NewWriterSink("w", &gatedWriter{gate: gate, w: &out}, FormatJSON)
	a := seqAlert(1)
	s.Send(a)
	a.Labels[1].Value = "changed"
	a.Annotations["summary"] = "changed"
	close(gate)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantSeqLines(t, out.String(), FormatJSON, 1, 2)
}

// gatedWriter blocks every Write until gate is closed.
type gatedWriter struct {
	gate chan struct{}
	w    io.Writer
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	<-g.gate
	return g.w.Write(p)
}

// flakyWriter fails its first fails writes, the first one after writing
// part bytes of p.
type flakyWriter struct {
	mu    sync.Mutex
	fails int
	part  int
	w     syncBuffer
}

func (f *flakyWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fails > 0 {
		f.fails--
		n := min(f.part, len(p))
		f.part = 0
		f.w.Write(p[:n])
		return n, errors.New("disk on fire")
	}
	return f.w.Write(p)
}

// TestWriterSinkRetries: failed writes are retried, in order, from the
// first line not written whole, and counted as failures, not drops.
func TestWriterSinkRetries(t *testing.T) {
	var two []byte
	for i := range 2 {
		a := seqAlert(i)
		two = FormatJSON.appendLine(two, &a)
	}
	fw := &flakyWriter{fails: 5, part: len(two)} // two whole lines, then nothing
	s := newWriterSink("w", fw, FormatJSON, fastRetry)
	sendAll(t, s, 0, 100)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantSeqLines(t, fw.w.String(), FormatJSON, 0, 100)
	if st := s.Stats(); st != (SinkStats{Sent: 100, Failed: 5}) {
		t.Errorf("stats %+v", st)
	}
}

func TestLinesComplete(t *testing.T) {
	l := lines{ends: []int{10, 20, 30}}
	for n, want := range map[int]int{0: 0, 9: 0, 10: 1, 19: 1, 20: 2, 29: 2, 30: 3, 31: 3} {
		if got := l.complete(n); got != want {
			t.Errorf("complete(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestQueueFull: with the destination stuck, Send never blocks, exactly
// the queue's capacity is kept (the alerts being delivered included) and
// the rest is dropped and counted; once the destination moves, the kept
// alerts arrive in order.
func TestQueueFull(t *testing.T) {
	gate := make(chan struct{})
	var out syncBuffer
	o := fastRetry
	o.size = 100
	s := newWriterSink("w", &gatedWriter{gate: gate, w: &out}, FormatJSON, o)
	if n := sendAll(t, s, 0, 250); n != 100 {
		t.Errorf("accepted %d, want 100", n)
	}
	if st := s.Stats(); st != (SinkStats{Dropped: 150, Queued: 100}) {
		t.Errorf("stats while stuck %+v", st)
	}
	close(gate)
	waitFor(t, "the queue to drain", func() bool { return s.Stats().Queued == 0 })
	if n := sendAll(t, s, 100, 110); n != 10 {
		t.Errorf("accepted %d after draining, want 10", n)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantSeqLines(t, out.String(), FormatJSON, 0, 110)
	if st := s.Stats(); st != (SinkStats{Sent: 110, Dropped: 150}) {
		t.Errorf("stats %+v", st)
	}
}

// fakeTarget records what it is given; fail decides each attempt's error.
type fakeTarget struct {
	mu      sync.Mutex
	got     []string // seq labels delivered
	fail    func(batch []Alert) error
	closed  bool
	batches int
}

func (f *fakeTarget) deliver(ctx context.Context, batch []Alert) (int, error) {
	f.mu.Lock()
	fail := f.fail
	f.mu.Unlock()
	if fail != nil {
		if err := fail(batch); err != nil {
			return 0, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches++
	for _, a := range batch {
		f.got = append(f.got, a.Labels.Get("seq"))
	}
	return len(batch), nil
}

func (f *fakeTarget) close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *fakeTarget) delivered() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

func seqs(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprint(&b, i, " ")
	}
	return b.String()
}

func joined(s []string) string { return strings.Join(s, " ") + " " }

// TestQueueRejected: a permanent error drops the batch (counted as failed
// and dropped) without retrying; the alerts behind it go on.
func TestQueueRejected(t *testing.T) {
	ft := &fakeTarget{fail: func(b []Alert) error {
		if b[0].Labels.Get("seq") == "3" {
			return &permanentError{errors.New("400 Bad Request")}
		}
		return nil
	}}
	s := newQueueSink("t", ft, fastRetry)
	sendAll(t, s, 0, 6)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := joined(ft.delivered()); got != "0 1 2 4 5 " {
		t.Errorf("delivered %s", got)
	}
	if st := s.Stats(); st != (SinkStats{Sent: 5, Failed: 1, Dropped: 1}) {
		t.Errorf("stats %+v", st)
	}
}

// TestQueueCloseDeadline: Close gives up when its context ends, aborts the
// attempt in progress, stops the goroutine, closes the target and says
// how many alerts it left.
func TestQueueCloseDeadline(t *testing.T) {
	ft := &fakeTarget{fail: func([]Alert) error { return errors.New("connection refused") }}
	s := newQueueSink("t", ft, fastRetry)
	sendAll(t, s, 0, 7)
	waitFor(t, "failed attempts", func() bool { return s.Stats().Failed >= 3 })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := s.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "closing alert sink t: 7 alerts undelivered") {
		t.Errorf("Close: %v", err)
	}
	if st := s.Stats(); st.Dropped != 7 || st.Queued != 0 || st.Sent != 0 {
		t.Errorf("stats %+v", st)
	}
	if !ft.closed {
		t.Error("target not closed")
	}
	if err2 := s.Close(context.Background()); err2 != err {
		t.Errorf("second Close: %v, want the first's error", err2)
	}
}

// TestQueueRing drives the ring through growth and wrap-around with a
// destination that takes one batch at a time, and checks the order.
func TestQueueRing(t *testing.T) {
	step := make(chan struct{})
	ft := &fakeTarget{fail: func([]Alert) error { <-step; return nil }}
	o := fastRetry
	o.size, o.maxBatch = 40, 3
	s := newQueueSink("t", ft, o)
	next := 0
	send := func(k int) {
		t.Helper()
		if n := sendAll(t, s, next, next+k); n != k {
			t.Fatalf("accepted %d of %d", n, k)
		}
		next += k
	}
	send(10)
	for range 3 {
		step <- struct{}{}
	}
	send(30) // grows 16, 32, 40: at most 4 of the first 10 are left
	for range 7 {
		step <- struct{}{}
	}
	send(15) // at most 15 left, head well past 0: wraps around
	close(step)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := joined(ft.delivered()), seqs(0, next); got != want {
		t.Errorf("delivered %s\nwant      %s", got, want)
	}
}

// retryAfterErr asks for a wait, as a 429 with Retry-After does.
type retryAfterErr time.Duration

func (e retryAfterErr) Error() string             { return "429" }
func (e retryAfterErr) retryAfter() time.Duration { return time.Duration(e) }

// TestBackoff: the wait after a failed attempt is the backoff's (doubling
// from minBackoff to maxBackoff, in the upper half of each step), or a
// destination's Retry-After up to maxBackoff when that is longer.
func TestBackoff(t *testing.T) {
	plain := errors.New("x")
	for _, tc := range []struct {
		attempt  int
		err      error
		min, max time.Duration
	}{
		{0, plain, 50 * time.Millisecond, 100 * time.Millisecond},
		{1, plain, 100 * time.Millisecond, 200 * time.Millisecond},
		{3, plain, 400 * time.Millisecond, 800 * time.Millisecond},
		{9, plain, 15 * time.Second, 30 * time.Second},
		{1000, plain, 15 * time.Second, 30 * time.Second},
		{0, retryAfterErr(5 * time.Second), 5 * time.Second, 5 * time.Second},
		{0, retryAfterErr(time.Hour), 30 * time.Second, 30 * time.Second},
	} {
		for range 20 {
			q := &queue{o: queueOptions{minBackoff: 100 * time.Millisecond, maxBackoff: 30 * time.Second},
				backoff: health.Backoff{Min: 100 * time.Millisecond, Max: 30 * time.Second}}
			for range tc.attempt {
				q.backoff.Next()
			}
			if d := q.wait(tc.err); d < tc.min || d > tc.max {
				t.Fatalf("attempt %d, %v: wait %v, want in [%v, %v]", tc.attempt, tc.err, d, tc.min, tc.max)
			}
		}
	}
}

func BenchmarkSend(b *testing.B) {
	s := NewWriterSink("discard", io.Discard, FormatJSON)
	a := synFlood()
	b.ReportAllocs()
	for b.Loop() {
		s.Send(a)
	}
	b.StopTimer()
	s.Close(context.Background())
}

// TestWriterSinkQueueHoldsABurst: a writer sink with a long queue keeps a
// burst that a default one would drop, and writes all of it.
func TestWriterSinkQueueHoldsABurst(t *testing.T) {
	var b syncBuffer
	s := NewWriterSinkQueue("burst", &b, FormatJSON, 5000)
	for i := range 5000 {
		if !s.Send(Alert{Labels: Labels{{"alertname", "A"}, {"i", strconv.Itoa(i)}}}) {
			t.Fatalf("alert %d dropped", i)
		}
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "\n"); n != 5000 {
		t.Errorf("%d lines written, want 5000", n)
	}
}

// TestQueueCloseFailingSink: a stop with a deadline gives a sink that is
// failing when it comes no more than failingGrace, and the error names
// the sink and its failure.
func TestQueueCloseFailingSink(t *testing.T) {
	ft := &fakeTarget{fail: func([]Alert) error { return errors.New("connection refused") }}
	s := newQueueSink("am", ft, queueOptions{minBackoff: time.Minute, maxBackoff: time.Minute})
	sendAll(t, s, 0, 3)
	waitFor(t, "a failed attempt", func() bool { return s.Stats().Failed >= 1 })
	if f := s.Stats().Failing; f == nil || f.Error() != "connection refused" {
		t.Errorf("Stats().Failing of a failing sink: %v", f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	err := s.Close(ctx)
	if took := time.Since(start); took > failingGrace+time.Second {
		t.Errorf("Close took %v with a failing sink, want about %v", took, failingGrace)
	}
	if err == nil || !strings.Contains(err.Error(), "closing alert sink am: 3 alerts undelivered, the sink failing (connection refused)") {
		t.Errorf("Close: %v", err)
	}
}
