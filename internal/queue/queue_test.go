package queue

import (
	"testing"
	"time"
)

func seq(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}

// TestRingOrderAndLimit: records come out in the order they went in,
// across growth and wrap-around, and past the limit Put drops.
func TestRingOrderAndLimit(t *testing.T) {
	r := New[int](3000)
	stop := make(chan struct{})
	next := 0
	for round := range 5 {
		if d := r.Put(seq(round*2000, 2000), nil); d != 0 {
			t.Fatalf("round %d: %d dropped", round, d)
		}
		for got := 0; got < 2000; {
			run := r.Take(700, 0, stop)
			for _, v := range run {
				if v != next {
					t.Fatalf("took %d, want %d", v, next)
				}
				next++
			}
			got += len(run)
			r.Release(len(run))
		}
	}
	if d := r.Put(seq(0, 3500), nil); d != 500 || r.Len() != 3000 {
		t.Fatalf("put 3500 in a queue of 3000: %d dropped, %d queued", d, r.Len())
	}
}

// TestRingLinger: a run shorter than max waits up to the linger for
// more, goes at once when max is there, and at once while a Drained
// waits.
func TestRingLinger(t *testing.T) {
	r := New[int](100)
	stop := make(chan struct{})
	r.Put(seq(0, 10), nil)
	start := time.Now()
	if run := r.Take(50, 100*time.Millisecond, stop); len(run) != 10 || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("took %d after %v: want 10 after the 100ms linger", len(run), time.Since(start))
	}
	r.Release(10)

	r.Put(seq(0, 10), nil)
	go func() {
		time.Sleep(20 * time.Millisecond)
		r.Put(seq(10, 40), nil)
	}()
	start = time.Now()
	if run := r.Take(50, 10*time.Second, stop); len(run) != 50 || time.Since(start) > 5*time.Second {
		t.Fatalf("took %d after %v: want 50 as soon as they were there", len(run), time.Since(start))
	}
	r.Release(50)

	r.Put(seq(0, 10), nil)
	done := make(chan bool)
	go func() { done <- r.Drained(time.After(10 * time.Second)) }()
	start = time.Now()
	run := r.Take(50, 10*time.Second, stop)
	if len(run) != 10 || time.Since(start) > 5*time.Second {
		t.Fatalf("took %d after %v: want the 10 at once while drained waits", len(run), time.Since(start))
	}
	r.Release(10)
	if !<-done {
		t.Fatal("Drained: not drained")
	}
}

// TestRingDiscardAndStop: Discard drops what is not being sent; a
// stopped queue takes nothing and wakes a Put waiting for room.
func TestRingDiscardAndStop(t *testing.T) {
	r := New[int](10)
	stop := make(chan struct{})
	r.Put(seq(0, 10), nil)
	run := r.Take(4, 0, stop)
	if d := r.Discard(); d != 6 || len(run) != 4 {
		t.Fatalf("discarded %d with 4 taken, want 6", d)
	}
	r.Release(4)
	r.Put(seq(0, 10), nil)
	dropped := make(chan int)
	go func() { dropped <- r.Put(seq(0, 5), func() bool { return true }) }()
	time.Sleep(20 * time.Millisecond)
	r.Signal(true)
	if d := <-dropped; d != 5 {
		t.Fatalf("a Put waiting for room, stopped: %d dropped, want 5", d)
	}
	close(stop)
	r.Discard()
	if run := r.Take(4, 0, stop); run != nil {
		t.Fatalf("took %v from a stopped, empty queue", run)
	}
}
