// Package queue is a network exporter's bounded queue of records (an
// IPFIX collector's, the OTLP exporter's): the pipeline's goroutine puts
// batches in without blocking (or waiting for room when told to), one
// sender goroutine takes runs out, sends them without the lock and
// releases them, and Flush-like callers wait for what was put to be
// released.
package queue

import (
	"sync"
	"time"
)

// start is a queue's first allocation, in records: a destination that
// keeps up never needs more.
const start = 1024

// Ring is a queue of up to limit records, packed whatever the sizes of
// the batches that brought them, in a slice that grows by doubling (up
// to limit) only as a backlog builds. Put never writes where a taken run
// lies, and a growth copies the records to a new slice, so a run taken
// stays valid until released. It is safe for one putting goroutine and
// one taking goroutine, and any number calling Len, Signal and Drained.
type Ring[T any] struct {
	mu      sync.Mutex
	room    *sync.Cond // broadcast at a release, a failure and a stop
	buf     []T
	head, n int
	taken   int // of the n, at the head, being sent
	limit   int
	in, out uint64 // records put and released (sent, dropped, discarded) so far
	stopped bool
	hurry   int // Drained calls waiting: a Take lingers no more

	wake     chan struct{} // a record to take, or a hurry
	progress chan struct{} // records released
}

// New returns an empty queue of up to limit records.
func New[T any](limit int) *Ring[T] {
	r := &Ring[T]{limit: limit, wake: make(chan struct{}, 1), progress: make(chan struct{}, 1)}
	r.room = sync.NewCond(&r.mu)
	return r
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Put copies recs in and returns how many found no room. While wait
// says so (called with the lock held), a full queue makes it wait for
// room instead of dropping.
func (r *Ring[T]) Put(recs []T, wait func() bool) (dropped int) {
	r.mu.Lock()
	for len(recs) > 0 && !r.stopped {
		free := r.limit - r.n
		if free == 0 {
			if wait != nil && wait() {
				notify(r.wake)
				r.room.Wait()
				continue
			}
			break
		}
		k := min(free, len(recs))
		r.grow(r.n + k)
		tail := (r.head + r.n) % len(r.buf)
		c := copy(r.buf[tail:], recs[:k])
		copy(r.buf, recs[c:k])
		r.n += k
		r.in += uint64(k)
		recs = recs[k:]
	}
	r.mu.Unlock()
	notify(r.wake)
	return len(recs)
}

// grow makes room for need records, keeping their order.
func (r *Ring[T]) grow(need int) {
	if need <= len(r.buf) {
		return
	}
	size := max(len(r.buf), start)
	for size < need {
		size *= 2
	}
	b := make([]T, min(size, r.limit))
	c := copy(b, r.buf[r.head:min(r.head+r.n, len(r.buf))])
	copy(b[c:], r.buf[:r.n-c])
	r.buf, r.head = b, 0
}

// Take waits for records and returns a run of up to max of them from
// the head, or nil when stop is closed. With linger above 0, a run
// shorter than max waits up to linger from its first record for more
// (a batch filled by size or by time), unless a Drained call or a stop
// hurries it.
func (r *Ring[T]) Take(max int, linger time.Duration, stop <-chan struct{}) []T {
	var deadline <-chan time.Time
	for {
		r.mu.Lock()
		if r.n > 0 {
			if r.n < max && linger > 0 && r.hurry == 0 && !r.stopped {
				if deadline == nil {
					t := time.NewTimer(linger)
					defer t.Stop()
					deadline = t.C
				}
				r.mu.Unlock()
				select {
				case <-r.wake:
					continue
				case <-deadline:
					linger = 0
					continue
				case <-stop:
					linger = 0
					continue
				}
			}
			k := min(r.n, max, len(r.buf)-r.head)
			run := r.buf[r.head : r.head+k]
			r.taken = k
			r.mu.Unlock()
			return run
		}
		r.mu.Unlock()
		select {
		case <-r.wake:
		case <-stop:
			return nil
		}
	}
}

// Release frees the first k records of the run taken (the rest stay
// queued, to be taken again).
func (r *Ring[T]) Release(k int) {
	r.mu.Lock()
	r.head = (r.head + k) % max(len(r.buf), 1)
	r.n -= k
	r.taken = 0
	r.out += uint64(k)
	r.room.Broadcast()
	r.mu.Unlock()
	notify(r.progress)
}

// Discard drops the records queued but not being sent, and returns how
// many.
func (r *Ring[T]) Discard() int {
	r.mu.Lock()
	d := r.n - r.taken
	r.n = r.taken
	r.out += uint64(d)
	r.room.Broadcast()
	r.mu.Unlock()
	notify(r.progress)
	return d
}

// Len is the count of records queued, being sent included.
func (r *Ring[T]) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Signal wakes a Put waiting for room, to look again at whether it
// should (the destination started failing, or stop: the queue takes
// nothing more).
func (r *Ring[T]) Signal(stop bool) {
	r.mu.Lock()
	r.stopped = r.stopped || stop
	r.room.Broadcast()
	r.mu.Unlock()
	notify(r.wake)
}

// Drained waits until every record put before the call is released, or
// until the deadline, and reports which. Meanwhile a Take does not
// linger.
func (r *Ring[T]) Drained(deadline <-chan time.Time) bool {
	r.mu.Lock()
	target := r.in
	r.hurry++
	r.mu.Unlock()
	notify(r.wake)
	defer func() {
		r.mu.Lock()
		r.hurry--
		r.mu.Unlock()
	}()
	for {
		r.mu.Lock()
		done := r.out >= target
		r.mu.Unlock()
		if done {
			return true
		}
		select {
		case <-r.progress:
		case <-deadline:
			return false
		}
	}
}
