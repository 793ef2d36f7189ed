package hashmix

import (
	"math"
	"math/bits"
	"testing"
)

// TestPinned fixes the outputs: filters are exchanged between agents and
// reloaded from disk, so these values are part of their formats.
func TestPinned(t *testing.T) {
	for _, c := range []struct{ in, mix uint64 }{
		{0, 0},
		{1, 0x5692161d100b05e5},
		{0xdeadbeef, 0x4e062702ec929eea},
		{math.MaxUint64, 0xb4d055fcf2cbbd7b},
	} {
		if got := Mix(c.in); got != c.mix {
			t.Errorf("Mix(%#x) = %#x, pinned %#x", c.in, got, c.mix)
		}
	}
	h1, h2 := Split(42, 7)
	if h1 != Mix(42^7) || h2 != Mix(h1^Golden) {
		t.Errorf("Split(42, 7) = %#x, %#x", h1, h2)
	}
	p1, p2 := Pair(42, 7)
	if p1 != h1 || p2 != h2|1 {
		t.Errorf("Pair(42, 7) = %#x, %#x", p1, p2)
	}
	if got := Reduce(1<<63, 10); got != 5 {
		t.Errorf("Reduce(2^63, 10) = %d, want 5", got)
	}
	if got := Nth(42, 2, 1000); got != 278 { // Reduce(Mix(42 + 3·Golden), 1000)
		t.Errorf("Nth(42, 2, 1000) = %d, pinned 278", got)
	}
}

// TestAvalanche: flipping one input bit flips each output bit with
// probability near 1/2 (within 0.05 over 4096 inputs per bit).
func TestAvalanche(t *testing.T) {
	const n = 4096
	var x uint64 = 0x243f6a8885a308d3 // fixed seed: pi's digits
	for bit := range 64 {
		var flips [64]int
		for range n {
			x = x*6364136223846793005 + 1442695040888963407
			d := Mix(x) ^ Mix(x^1<<bit)
			for d != 0 {
				flips[bits.TrailingZeros64(d)]++
				d &= d - 1
			}
		}
		for out, f := range flips {
			if p := float64(f) / n; math.Abs(p-0.5) > 0.05 {
				t.Fatalf("input bit %d flips output bit %d with probability %.3f", bit, out, p)
			}
		}
	}
}

// TestReduceUniform: a chi-square test of Reduce(Mix(i), 97) over 97,000
// consecutive inputs (96 degrees of freedom; 99.9th percentile 143.3).
func TestReduceUniform(t *testing.T) {
	const n, m = 97_000, 97
	var c [m]float64
	for i := range uint64(n) {
		c[Reduce(Mix(i), m)]++
	}
	var chi float64
	for _, o := range c {
		e := float64(n) / m
		chi += (o - e) * (o - e) / e
	}
	if chi > 143.3 {
		t.Errorf("chi-square %.1f over 96 degrees of freedom", chi)
	}
}

func TestNoAllocs(t *testing.T) {
	var s uint64
	if a := testing.AllocsPerRun(100, func() { a, b := Pair(s, 3); s += Reduce(a^b, 1000) }); a != 0 {
		t.Errorf("%v allocs", a)
	}
}
