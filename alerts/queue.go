package alerts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowmon/flowmon/internal/health"
)

// Defaults of a sink's queue and retries.
const (
	DefaultQueue      = 1024
	DefaultMinBackoff = 100 * time.Millisecond
	DefaultMaxBackoff = 30 * time.Second
)

// A target is the destination a queue delivers to, used by the queue's
// goroutine only. deliver sends batch (at most queueOptions.maxBatch
// alerts, oldest first) and returns how many of its first alerts arrived,
// all of them when err is nil; an error marked permanent means the rest
// of the batch can never arrive. deliver should give up when ctx ends.
type target interface {
	deliver(ctx context.Context, batch []Alert) (int, error)
	close() error
}

// permanentError marks a delivery error that retrying cannot cure (an
// HTTP 4xx other than 408 and 429): the batch is dropped.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// retryAfter is implemented by errors that carry the destination's own
// wish of when to retry (HTTP Retry-After).
type retryAfter interface{ retryAfter() time.Duration }

type queueOptions struct {
	size                   int // alerts; the queue drops beyond
	minBackoff, maxBackoff time.Duration
	maxBatch               int
	// resend, if set, returns alerts to deliver again every resendEvery
	// (Alertmanager's firing set), between batches of the queue.
	resend      func() []Alert
	resendEvery time.Duration
	log         *slog.Logger
}

// queue is the bounded queue and delivery goroutine of every sink. An
// alert leaves the queue only once delivered or rejected for good, so
// while the destination fails the queue holds everything, in order, and
// only a full queue drops. Failed attempts are retried after an
// exponential, jittered backoff between minBackoff and maxBackoff
// (health.Backoff). The queue is a health.Component, "alerts:NAME":
// failing from an attempt that fails to the next that delivers.
//
// push takes a mutex that the goroutine holds only to copy a batch out or
// to remove one, never while delivering, so a sender waits no longer than
// a copy of at most maxBatch alerts.
type queue struct {
	name string
	t    target
	o    queueOptions

	mu      sync.Mutex
	ring    []Alert // grown on demand up to o.size
	head, n int     // ring[head], ... the n waiting alerts, oldest first
	closing bool

	wake      chan struct{} // a push or Close happened (capacity 1)
	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{} // the goroutine has returned
	closeOnce sync.Once
	closeErr  error

	batch   []Alert        // the batch being delivered (goroutine only)
	backoff health.Backoff // goroutine only
	// health says whether the sink delivers: the logs say when a failure
	// starts and ends, and Close gives a failing sink little grace and
	// names why.
	health *health.Component

	sent, failed, dropped, queued atomic.Uint64
}

func newQueue(name string, t target, o queueOptions) *queue {
	if o.size <= 0 {
		o.size = DefaultQueue
	}
	if o.minBackoff <= 0 {
		o.minBackoff = DefaultMinBackoff
	}
	if o.maxBackoff < o.minBackoff {
		o.maxBackoff = max(o.minBackoff, DefaultMaxBackoff)
	}
	if o.maxBatch <= 0 {
		o.maxBatch = 1
	}
	if o.log == nil {
		o.log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	q := &queue{name: name, t: t, o: o, wake: make(chan struct{}, 1), ctx: ctx, cancel: cancel, done: make(chan struct{}),
		backoff: health.Backoff{Min: o.minBackoff, Max: o.maxBackoff}, health: health.New("alerts:"+name, o.log)}
	go q.run()
	return q
}

// push queues a, or counts a drop and reports false when the queue is
// full or closing.
func (q *queue) push(a Alert) bool {
	q.mu.Lock()
	if q.closing || q.n == q.o.size {
		q.mu.Unlock()
		q.dropped.Add(1)
		return false
	}
	if q.n == len(q.ring) {
		q.grow()
	}
	q.ring[(q.head+q.n)%len(q.ring)] = a
	q.n++
	q.queued.Store(uint64(q.n))
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// grow doubles the ring (at least 16, at most o.size), keeping the order.
func (q *queue) grow() {
	ring := make([]Alert, min(max(2*len(q.ring), 16), q.o.size))
	for i := range q.n {
		ring[i] = q.ring[(q.head+i)%len(q.ring)]
	}
	q.ring, q.head = ring, 0
}

// peek copies the oldest alerts, at most maxBatch, into q.batch. It
// reports closing, which matters only once the queue is empty.
func (q *queue) peek() (batch []Alert, closing bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.batch = q.batch[:0]
	for i := range min(q.n, q.o.maxBatch) {
		q.batch = append(q.batch, q.ring[(q.head+i)%len(q.ring)])
	}
	return q.batch, q.closing
}

// pop removes the k oldest alerts.
func (q *queue) pop(k int) {
	q.mu.Lock()
	for range k {
		q.ring[q.head] = Alert{} // let the labels and annotations go
		q.head = (q.head + 1) % len(q.ring)
	}
	q.n -= k
	q.queued.Store(uint64(q.n))
	q.mu.Unlock()
}

func (q *queue) run() {
	defer close(q.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var resendAt time.Time
	if q.o.resend != nil {
		resendAt = time.Now().Add(q.o.resendEvery)
	}
	for {
		if q.o.resend != nil && !time.Now().Before(resendAt) {
			if !q.resendAll() {
				return
			}
			resendAt = time.Now().Add(q.o.resendEvery)
		}
		batch, closing := q.peek()
		if len(batch) > 0 {
			if !q.deliver(batch, true) {
				return
			}
			continue
		}
		if closing {
			return
		}
		var tick <-chan time.Time
		if q.o.resend != nil {
			timer.Reset(time.Until(resendAt))
			tick = timer.C
		}
		select {
		case <-q.wake:
		case <-tick:
		case <-q.ctx.Done():
			return
		}
		timer.Stop()
	}
}

// resendAll delivers the resend set in batches; it stops early when the
// queue closes (the destination forgets firing alerts only after its own
// timeout) and reports false when the queue's context ended.
func (q *queue) resendAll() bool {
	if q.isClosing() {
		return true
	}
	all := q.o.resend()
	for len(all) > 0 && !q.isClosing() {
		k := min(len(all), q.o.maxBatch)
		if !q.deliver(all[:k], false) {
			return false
		}
		all = all[k:]
	}
	return true
}

func (q *queue) isClosing() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closing
}

// deliver sends batch, retrying with backoff until it arrives or is
// rejected for good. When the batch is the queue's head (queued), what is
// done with (delivered or dropped) leaves the queue as it goes. It
// returns false if the queue's context ended first.
func (q *queue) deliver(batch []Alert, queued bool) bool {
	done := func(k int) {
		if queued && k > 0 {
			q.pop(k)
		}
		batch = batch[k:]
	}
	for {
		n, err := q.t.deliver(q.ctx, batch)
		q.sent.Add(uint64(n))
		if err == nil {
			done(len(batch))
			q.backoff.Reset()
			q.health.OK()
			return true
		}
		done(n)
		if q.ctx.Err() != nil {
			return false // Close gave up: not the destination's failure
		}
		q.failed.Add(1)
		if len(batch) == 0 {
			return true // all arrived, whatever the error says
		}
		if pe := (*permanentError)(nil); errors.As(err, &pe) {
			q.dropped.Add(uint64(len(batch)))
			q.o.log.Warn("alert sink dropped rejected alerts", "sink", q.name, "alerts", len(batch), "err", err)
			done(len(batch))
			return true
		}
		q.health.Fail(err)
		t := time.NewTimer(q.wait(err))
		select {
		case <-t.C:
		case <-q.ctx.Done():
			t.Stop()
			return false
		}
	}
}

// wait is the wait before the next attempt after one that failed with
// err: the backoff's next, or the destination's Retry-After up to
// maxBackoff if that is longer.
func (q *queue) wait(err error) time.Duration {
	d := q.backoff.Next()
	if ra, ok := err.(retryAfter); ok {
		d = max(d, min(ra.retryAfter(), q.o.maxBackoff))
	}
	return d
}

// failingGrace is what a stop gives a sink that is failing when it comes.
const failingGrace = time.Second

// close implements Sink.Close for the queue: see there.
func (q *queue) close(ctx context.Context) error {
	q.closeOnce.Do(func() {
		q.mu.Lock()
		q.closing = true
		q.mu.Unlock()
		select {
		case q.wake <- struct{}{}:
		default:
		}
		// A sink failing now gets at most failingGrace of a stop that has
		// a deadline: the stop would mostly wait out its backoff, and its
		// failure was logged when it began. (Without a deadline Close
		// waits for the queue, as a replay's end does.)
		failing := q.health.Err()
		if _, bounded := ctx.Deadline(); failing != nil && bounded {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, failingGrace)
			defer cancel()
		}
		select {
		case <-q.done:
		case <-ctx.Done():
			q.cancel() // aborts a request or a backoff in progress
			<-q.done
		}
		q.cancel()
		q.mu.Lock()
		left := q.n
		clear(q.ring)
		q.n = 0
		q.queued.Store(0)
		q.mu.Unlock()
		q.dropped.Add(uint64(left))
		var errs []error
		switch {
		case left > 0 && failing != nil && ctx.Err() != nil:
			errs = append(errs, fmt.Errorf("closing alert sink %s: %d alerts undelivered, the sink failing (%v): %w", q.name, left, failing, ctx.Err()))
		case left > 0:
			errs = append(errs, fmt.Errorf("closing alert sink %s: %d alerts undelivered: %w", q.name, left, ctx.Err()))
		}
		if err := q.t.close(); err != nil {
			errs = append(errs, fmt.Errorf("closing alert sink %s: %w", q.name, err))
		}
		q.closeErr = errors.Join(errs...)
	})
	return q.closeErr
}

func (q *queue) stats() SinkStats {
	return SinkStats{Sent: q.sent.Load(), Failed: q.failed.Load(), Dropped: q.dropped.Load(), Queued: q.queued.Load(),
		Failing: q.health.Err()}
}
