package rules

import (
	"math"
	"sync/atomic"

	"github.com/flowmon/flowmon/internal/period"
)

// A counting rule counts per key in tumbling windows of packet time,
// aligned on multiples of the window since the Unix epoch. Its counters
// are shared by the shards (a destination's flows are spread over all of
// them) and updated with atomics, so they keep three slots: the current
// window's, the one that just ended (read when it is checked, while a
// shard a few packets behind may still add to it) and the next one's,
// cleared a whole window before it is used.
const slots = 3

// keyCounter counts per key within one window slot. Implementations are
// safe for concurrent use and allocate nothing.
type keyCounter interface {
	// add counts n for key (or, for a distinct count, the item) and
	// returns the key's estimate before and after.
	add(key, item uint64, n uint32) (before, after float64)
	estimate(key uint64) float64
	// reset zeroes the counter while others may use it; clear, faster,
	// only one nobody uses.
	reset()
	clear()
	bytes() int
}

// windows is a counting rule's clock.
type windows struct {
	size int64        // window length, ns
	cur  atomic.Int64 // index of the newest window begun; noWindow before the first
}

const noWindow = math.MinInt64

func newWindows(size int64) *windows {
	w := &windows{size: size}
	w.cur.Store(noWindow)
	return w
}

// at is the window holding packet time t (ns), and whether a count may go
// into it: false when it is two or more behind the clock, since its slot
// has been cleared for the window after the current one (slots) and a
// count would land in that window. Only a shard that fell a window behind
// the others meets one (the pipeline keeps its shards within a fraction
// of a second of packet time of each other: engine.batchSpan). Most
// packets fall in the current window, checked with two comparisons: a
// 64-bit division costs tens of cycles, and this runs for every packet a
// counting rule sees.
func (w *windows) at(t int64) (i int64, ok bool) {
	c := w.cur.Load()
	if c == noWindow {
		return period.Of(t, w.size), true
	}
	if start := c * w.size; t >= start && t < start+w.size {
		return c, true
	}
	i = period.Of(t, w.size)
	return i, i >= c-1
}

// slot is the slot of window i.
func slot(i int64) int { return int(((i % slots) + slots) % slots) }

// advance moves the clock to window i if it is ahead, and reports
// whether it moved; if a window ended (ok), it returns it and whether
// windows between it and i passed empty (a gap in the traffic). Moving
// from the clock's start ends no window.
func (w *windows) advance(i int64) (moved bool, ended int64, gap, ok bool) {
	for {
		c := w.cur.Load()
		if i <= c {
			return false, 0, false, false
		}
		if w.cur.CompareAndSwap(c, i) {
			if c == noWindow {
				return true, 0, false, false
			}
			return true, c, i > c+1, true
		}
	}
}
