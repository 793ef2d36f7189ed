package health

import (
	"math/rand/v2"
	"time"
)

// Backoff is the wait between attempts at a failing destination: Min,
// doubled at each attempt up to Max, each wait drawn uniformly from the
// upper half of its step so that parts failing together (the collectors
// behind one network, the sinks of one Alertmanager) do not retry in
// step. The zero Backoff waits nothing. It is not safe for concurrent
// use: each retrying goroutine owns one.
type Backoff struct {
	Min, Max time.Duration
	step     time.Duration // the next step; 0: Min
}

// Next returns the wait before the next attempt and doubles the step.
func (b *Backoff) Next() time.Duration {
	d := b.Peek()
	b.step = min(2*d, max(b.Max, b.Min))
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// Peek returns the next step without jitter and without taking it.
func (b *Backoff) Peek() time.Duration {
	if b.step == 0 {
		return b.Min
	}
	return b.step
}

// Reset starts again at Min, as after an attempt that worked.
func (b *Backoff) Reset() { b.step = 0 }
