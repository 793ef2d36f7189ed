package ipfix

import (
	"sync"
	"time"

	"github.com/flowmon/flowmon/record"
)

// ringStart is a queue's first allocation, in records: a collector that
// keeps up never needs more.
const ringStart = 1024

// ring is a collector's queue of records: up to limit of them, packed
// whatever the sizes of the batches that brought them, in a slice that
// grows by doubling (up to limit) only as a backlog builds. The
// pipeline's goroutine puts; the collector's goroutine takes a run of
// records, sends it without the lock and then releases what it is done
// with. Put never writes where a taken run lies, and a growth copies the
// records to a new slice, so a run taken stays valid until released.
type ring struct {
	mu      sync.Mutex
	room    *sync.Cond // broadcast at a release, a failure and a stop
	buf     []record.Flow
	head, n int
	taken   int // of the n, at the head, being sent
	limit   int
	in, out uint64 // records put and released (sent, dropped, discarded) so far
	stopped bool

	wake     chan struct{} // a record to take
	progress chan struct{} // records released
}

func newRing(limit int) *ring {
	r := &ring{limit: limit, wake: make(chan struct{}, 1), progress: make(chan struct{}, 1)}
	r.room = sync.NewCond(&r.mu)
	return r
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// put copies flows in and returns how many found no room. While wait
// says so (called with the lock held), a full queue makes it wait for
// room instead of dropping.
func (r *ring) put(flows []record.Flow, wait func() bool) (dropped int) {
	r.mu.Lock()
	for len(flows) > 0 && !r.stopped {
		free := r.limit - r.n
		if free == 0 {
			if wait != nil && wait() {
				notify(r.wake)
				r.room.Wait()
				continue
			}
			break
		}
		k := min(free, len(flows))
		r.grow(r.n + k)
		tail := (r.head + r.n) % len(r.buf)
		c := copy(r.buf[tail:], flows[:k])
		copy(r.buf, flows[c:k])
		r.n += k
		r.in += uint64(k)
		flows = flows[k:]
	}
	r.mu.Unlock()
	notify(r.wake)
	return len(flows)
}

// grow makes room for need records, keeping their order.
func (r *ring) grow(need int) {
	if need <= len(r.buf) {
		return
	}
	size := max(len(r.buf), ringStart)
	for size < need {
		size *= 2
	}
	b := make([]record.Flow, min(size, r.limit))
	c := copy(b, r.buf[r.head:min(r.head+r.n, len(r.buf))])
	copy(b[c:], r.buf[:r.n-c])
	r.buf, r.head = b, 0
}

// take waits for records and returns a run of up to max of them from the
// head, or nil when stop is closed.
func (r *ring) take(max int, stop <-chan struct{}) []record.Flow {
	for {
		r.mu.Lock()
		if r.n > 0 {
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

// release frees the first k records of the run taken (the rest stay
// queued, to be taken again).
func (r *ring) release(k int) {
	r.mu.Lock()
	r.head = (r.head + k) % max(len(r.buf), 1)
	r.n -= k
	r.taken = 0
	r.out += uint64(k)
	r.room.Broadcast()
	r.mu.Unlock()
	notify(r.progress)
}

// discard drops the records queued but not being sent, and returns how
// many.
func (r *ring) discard() int {
	r.mu.Lock()
	d := r.n - r.taken
	r.n = r.taken
	r.out += uint64(d)
	r.room.Broadcast()
	r.mu.Unlock()
	notify(r.progress)
	return d
}

// len is the count of records queued, being sent included.
func (r *ring) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// signal wakes a put waiting for room, to look again at whether it
// should (the collector started failing, or stopped).
func (r *ring) signal(stop bool) {
	r.mu.Lock()
	r.stopped = r.stopped || stop
	r.room.Broadcast()
	r.mu.Unlock()
}

// drained waits until every record put before the call is released, or
// until the deadline, and reports which.
func (r *ring) drained(deadline <-chan time.Time) bool {
	r.mu.Lock()
	target := r.in
	r.mu.Unlock()
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
