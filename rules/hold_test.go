package rules

import (
	"math"
	"testing"
	"time"

	"github.com/flowmon/flowmon/internal/hashmix"
)

// TestSampleAndHold checks the table against the paper's maths. A flow of
// S bytes counts all but the bytes G before its sample, G exponential of
// mean 1/p = T/O; its count passes T when G < S - T: never for S <= T,
// for S = 1.5T with probability 1-e^-(O/2), for S = 2T 1-e^-O.
func TestSampleAndHold(t *testing.T) {
	const T = 1_000_000
	const pkt = 1000
	for _, c := range []struct {
		size     int // bytes a flow sends in the window
		min, max float64
	}{
		{T / 4, 0, 0},
		{T, 0, 0},
		{3 * T / 2, 1 - math.Exp(-oversampling/2) - 0.015, 1 - math.Exp(-oversampling/2) + 0.015},
		{2 * T, 1 - math.Exp(-oversampling) - 0.005, 1},
	} {
		flows, caught := 2000, 0
		var relErr float64
		for f := range flows {
			tab := newHoldTable(T, time.Minute, true, uint64(f)+1)
			h := hashmix.Mix(uint64(f))
			var after uint64
			for i := range c.size / pkt {
				_, after = tab.add(h, int64(i), pkt)
			}
			if after > T {
				caught++
				relErr += math.Abs(float64(after)-float64(c.size)) / float64(c.size)
			}
		}
		frac := float64(caught) / float64(flows)
		if frac < c.min || frac > c.max {
			t.Errorf("flows of %d bytes: %.3f caught, want [%.3f, %.3f]", c.size, frac, c.min, c.max)
		}
		if caught > 0 {
			if e := relErr / float64(caught); e > 2.0/oversampling {
				t.Errorf("flows of %d bytes: mean relative error %.3f of the caught", c.size, e)
			}
		}
	}
}

// TestQuietAgrees: a packet quiet calls quiet leaves the table as it is
// (add, given it, returns nothing and holds nothing), whatever the packet
// size (the draw's two forms, small and large), the window and whether
// its flow is held, so that Shard.Packet may skip add for it.
func TestQuietAgrees(t *testing.T) {
	for _, above := range []float64{1000, 1e5, 5e6} {
		tab := newHoldTable(above, time.Second, true, 7)
		quiet := 0
		for i := range 200_000 {
			h := hashmix.Mix(uint64(i % 3000))
			ts := int64(i) * int64(time.Millisecond) / 50 // 4 windows
			n := uint32(hashmix.Mix(uint64(i)) % 9000)
			if !tab.quiet(h, ts, n) {
				tab.add(h, ts, n)
				continue
			}
			quiet++
			held := tab.n
			if before, after := tab.add(h, ts, n); before != 0 || after != 0 || tab.n != held {
				t.Fatalf("above %g: packet %d quiet, but add counted it (%d, %d; %d held, was %d)", above, i, before, after, tab.n, held)
			}
		}
		if quiet == 0 {
			t.Errorf("above %g: no packet quiet", above)
		}
	}
}

// TestSampleAndHoldBounded: a flood of distinct flows fills at most three
// quarters of the table and counts the rest as not held; a new window
// empties it.
func TestSampleAndHoldBounded(t *testing.T) {
	tab := newHoldTable(1000, time.Minute, true, 1) // p = 8e-3 a byte: nearly every 1000-byte packet sampled
	for f := range 100_000 {
		tab.add(hashmix.Mix(uint64(f)), 0, 1000)
	}
	if tab.n > holdSize*3/4 || tab.full == 0 {
		t.Errorf("%d held, %d not held", tab.n, tab.full)
	}
	if _, after := tab.add(42, int64(time.Minute), 1000); tab.n > 1 || after == 0 && tab.n == 1 {
		t.Errorf("new window: %d held", tab.n)
	}
}

func BenchmarkHoldAdd(b *testing.B) {
	tab := newHoldTable(5e6, time.Minute, true, 1)
	b.ReportAllocs()
	for i := range b.N {
		tab.add(hashmix.Mix(uint64(i&(1<<17-1))), int64(i), 1500)
	}
}
