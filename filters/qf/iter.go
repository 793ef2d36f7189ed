package qf

import (
	"fmt"
	"iter"
)

// Cursor reads a filter's fingerprints in ascending order (copies
// repeated), the order of its runs: quotient first, then remainder. It is
// the sequential pass that Merge and Resize make, and the one a Cascade
// Filter makes over its in-RAM filter. The filter must not change while
// a cursor reads it.
//
// A table wraps around: the cluster holding the last slot may go on in
// slot 0 and after, and its remainders there come before slot 0's own in
// slot order but after them in fingerprint order. So a cursor makes two
// passes when slot 0 is shifted: first over that cluster, keeping only
// the quotients past the table's end (the smallest ones), then over
// the table from the first unshifted slot j, keeping only the others.
type Cursor struct {
	f      *Filter
	pass   int    // 1 or 2; 0 when done
	i, end uint64 // slots still to decode, unwrapped (i may pass size)
	quot   uint64 // quotient of the run being decoded, unwrapped
	wrap   bool   // keep quot >= size (pass 1) or quot < size (pass 2)
	j      uint64 // first unshifted slot (pass 2 starts there)
	inClus bool   // a cluster's start has been decoded and no empty slot since
	err    error
}

// Cursor returns a cursor at f's smallest fingerprint.
func (f *Filter) Cursor() *Cursor {
	c := &Cursor{f: f}
	c.reset()
	return c
}

func (c *Cursor) reset() {
	f := c.f
	*c = Cursor{f: f}
	if f.get(0)&shifted == 0 {
		c.pass, c.i, c.end = 2, 0, f.size
		return
	}
	j := uint64(1)
	for j < f.size && f.get(j)&shifted != 0 {
		j++
	}
	if j == f.size {
		c.err = fmt.Errorf("every slot is shifted: %w", ErrCorrupt)
		return
	}
	// The cluster over the end starts at the first unshifted slot back
	// from the last one (j exists, so the walk ends).
	s := f.size - 1
	for f.get(s)&shifted != 0 {
		s--
	}
	c.j = j
	c.pass, c.i, c.end, c.wrap = 1, s, f.size+j, true
}

// Next returns the next fingerprint, or false at the end (or on a
// corrupt table: see Err).
func (c *Cursor) Next() (uint64, bool) {
	f := c.f
	for c.pass != 0 {
		for c.i < c.end {
			i := c.i
			v := f.get(i & f.mask)
			c.i++
			if v&metaMask == 0 {
				c.inClus = false
				continue
			}
			switch {
			case v&shifted == 0:
				// A cluster's first remainder, in its canonical slot.
				if v&(occupied|continuation) != occupied {
					c.fail("slot %d is unshifted but not a run's head in its canonical slot", i&f.mask)
					return 0, false
				}
				c.quot, c.inClus = i, true
			case !c.inClus:
				c.fail("slot %d is shifted but no cluster starts before it", i&f.mask)
				return 0, false
			case v&continuation == 0:
				// The next run's head: its quotient is the next
				// canonical slot after the last one, and not past its
				// own slot.
				for {
					c.quot++
					if c.quot > i {
						c.fail("run head in slot %d has no canonical slot before it", i&f.mask)
						return 0, false
					}
					if f.get(c.quot&f.mask)&occupied != 0 {
						break
					}
				}
			}
			if (c.quot >= f.size) == c.wrap {
				return (c.quot&f.mask)<<f.r | v>>metaBits, true
			}
		}
		if c.pass == 1 {
			c.pass, c.i, c.end, c.wrap, c.quot, c.inClus = 2, c.j, c.j+f.size, false, 0, false
			continue
		}
		c.pass = 0
	}
	return 0, false
}

func (c *Cursor) fail(format string, a ...any) {
	c.err = fmt.Errorf(format+": %w", append(a, ErrCorrupt)...)
	c.pass = 0
}

// Err is the reason the cursor stopped early on a table that does not
// decode (only a filter built by UnmarshalBinary's checks can be given
// such a table, so it is for that check), or nil.
func (c *Cursor) Err() error { return c.err }

// All yields f's fingerprints in ascending order, copies repeated.
func (f *Filter) All() iter.Seq[uint64] {
	return func(yield func(uint64) bool) {
		c := f.Cursor()
		for {
			fp, ok := c.Next()
			if !ok || !yield(fp) {
				return
			}
		}
	}
}
