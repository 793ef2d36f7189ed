package report

// Buckets is how many buckets of packet time a series holds: its
// resolution halves when the trace outgrows them, so a series holds
// between Buckets/2 and Buckets of them whatever the trace's length.
const Buckets = 1024

// firstShift is the first buckets' width, 2^firstShift ns (65.5 µs): a
// trace of a few milliseconds still gets several buckets, and a long one
// costs a halving per doubling of its span (at most 34 for a century).
const firstShift = 16

// grid places packet times into buckets: bucket i holds the times in
// [origin + i<<shift, origin + (i+1)<<shift) nanoseconds. origin is a
// multiple of the width, so two grids of the same width agree on every
// bucket's bounds and the series of several shards add bucket by bucket
// once brought to the same width.
type grid struct {
	origin int64
	shift  uint
	used   int // buckets from origin up to the last one holding anything
	set    bool
}

// index returns the bucket of ns, or -1 when ns is outside the grid's
// buckets (the caller then regrids).
func (g *grid) index(ns int64) int {
	d := uint64(ns - g.origin)
	if i := d >> g.shift; i < Buckets && ns >= g.origin {
		return int(i)
	}
	return -1
}

// floorTo rounds ns down to a multiple of 2^shift (before the epoch too).
func floorTo(ns int64, shift uint) int64 { return ns >> shift << shift }

// end is the time just past the grid's last used bucket.
func (g *grid) end() int64 { return g.origin + int64(g.used)<<g.shift }

// cover returns the narrowest grid of width at least 2^shift whose
// buckets hold [lo, hi] (hi inclusive).
func cover(lo, hi int64, shift uint) grid {
	for ; ; shift++ {
		o := floorTo(lo, shift)
		if n := (hi-o)>>shift + 1; n <= Buckets {
			return grid{origin: o, shift: shift, used: int(n), set: true}
		}
	}
}

// regrid moves the n buckets of b, laid out on from, to their places on
// to (which covers from: no finer, no later origin, no earlier end),
// adding the ones that fall into one bucket with add; scratch is as long
// as b, so that nothing is allocated.
func regrid[B any](b, scratch []B, from, to grid, add func(dst, src *B)) {
	var zero B
	copy(scratch, b[:from.used])
	for i := range b {
		b[i] = zero
	}
	for i := range from.used {
		t := from.origin + int64(i)<<from.shift
		add(&b[(t-to.origin)>>to.shift], &scratch[i])
	}
}
