package cascadeeval

import (
	"math/bits"
	"time"
)

// Latencies is a histogram of durations in log-linear buckets, 16 to a
// power of two: a quantile read from it is the upper bound of its
// bucket, at most 1/16 above the true one (and exact below 16 ns). It
// takes a duration in a few nanoseconds and holds 1,024 counters
// however many it takes, so that every one of tens of millions of
// insertions can be timed.
type Latencies struct {
	N      uint64
	Max    time.Duration
	counts [64 * 16]uint64
}

// bucket is the histogram slot of ns nanoseconds.
func bucket(ns uint64) int {
	if ns < 16 {
		return int(ns)
	}
	e := bits.Len64(ns) - 5 // ns>>e is in [16, 32)
	return (e+1)*16 + int(ns>>e) - 16
}

// upper is the largest duration in bucket i.
func upper(i int) time.Duration {
	if i < 16 {
		return time.Duration(i)
	}
	e, m := i/16-1, uint64(i%16+16)
	return time.Duration((m+1)<<e - 1)
}

// Add counts one duration.
func (l *Latencies) Add(d time.Duration) {
	l.N++
	l.Max = max(l.Max, d)
	l.counts[bucket(uint64(max(d, 0)))]++
}

// Quantile is the duration at or below which a fraction q of those added
// lie (the upper bound of its bucket, or Max if lower).
func (l *Latencies) Quantile(q float64) time.Duration {
	if l.N == 0 {
		return 0
	}
	rank := uint64(q * float64(l.N))
	var seen uint64
	for i, c := range l.counts {
		if seen += c; seen > rank {
			return min(upper(i), l.Max)
		}
	}
	return l.Max
}
