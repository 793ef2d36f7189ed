package qf

import (
	"fmt"
	"math"
)

// build returns a filter of 2^q slots holding the n fingerprints next
// yields in ascending order, written in one sequential pass (Writer) and
// folded where the last cluster runs past the end.
func build(q, r uint, n uint64, next func() (uint64, bool)) (*Filter, error) {
	if n >= 1<<q {
		return nil, fmt.Errorf("%d fingerprints in 2^%d slots: %w", n, q, ErrFull)
	}
	f := newShape(q, r)
	body := len(f.words) - 1 // the padding word stays zero
	k := 0
	w, err := NewWriter(q, r, func(ws []uint64) error {
		for _, x := range ws {
			if k < body {
				f.words[k] = x
			}
			k++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for fp, ok := next(); ok; fp, ok = next() {
		if err := w.Add(fp); err != nil {
			return nil, err
		}
	}
	if _, err := w.Close(); err != nil {
		return nil, err
	}
	// Drop the overflow's bits that share the last slot's word.
	if used := f.size * uint64(f.w); used%64 != 0 {
		f.words[used/64] &= 1<<(used%64) - 1
	}
	f.n = w.Len()
	f.fold(w.Overflow())
	return f, nil
}

// fold moves the remainders a Writer placed past the table's end (their
// slot values, in order) to its start, where a wrapping table keeps
// them: they take slots 0, 1, ... and push the first clusters' remainders
// on, each to max(its quotient, the slot after the previous one), until
// one stays where it was. Occupied bits belong to slots and do not move.
func (f *Filter) fold(over []uint64) {
	if len(over) == 0 {
		return
	}
	type move struct{ pos, v uint64 }
	var moves []move
	prev := uint64(len(over)) - 1
	var quot uint64
	for i := uint64(0); i < f.size; i++ {
		v := f.get(i)
		if v&metaMask == 0 {
			if i > prev {
				break
			}
			continue
		}
		switch {
		case v&shifted == 0:
			quot = i
		case v&continuation == 0:
			for {
				quot++
				if f.get(quot)&occupied != 0 {
					break
				}
			}
		}
		np := max(quot, prev+1)
		if np == i {
			break
		}
		v &^= occupied | shifted
		if np != quot {
			v |= shifted
		}
		moves = append(moves, move{np, v})
		prev = np
	}
	for i := uint64(0); i <= prev; i++ {
		f.set(i, f.get(i)&occupied)
	}
	for i, v := range over {
		f.set(uint64(i), v|f.get(uint64(i))&occupied)
	}
	for _, m := range moves {
		f.set(m.pos, m.v|f.get(m.pos)&occupied)
	}
}

// Resize returns a filter of 2^q slots holding f's fingerprints. The
// fingerprints keep their q+r bits: doubling (q = f's q+1) takes one more
// bit of each as quotient and leaves r-1 as remainder, halving gives one
// back, and the paper's point is that neither needs the keys: a
// fingerprint is its quotient and remainder. One sequential pass, as
// Merge. The false-positive rate stays that of n fingerprints of q+r
// bits; only the load changes.
func (f *Filter) Resize(q uint) (*Filter, error) {
	p := f.q + f.r
	if q < 1 || q >= p {
		return nil, fmt.Errorf("resize a filter of %d-bit fingerprints to %d quotient bits: need 1 to %d: %w",
			p, q, p-1, ErrInvalidOptions)
	}
	if err := checkShape(q, p-q); err != nil {
		return nil, err
	}
	c := f.Cursor()
	g, err := build(q, p-q, f.n, c.Next)
	if err == nil && c.Err() != nil {
		err = c.Err()
	}
	return g, err
}

// Double is Resize to twice the slots.
func (f *Filter) Double() (*Filter, error) { return f.Resize(f.q + 1) }

// Merge returns a new filter holding the fingerprints of a and b (copies
// of one fingerprint in both are kept: the union of multisets), written
// in one sequential pass over both filters' sorted runs, as a merge of
// two sorted arrays (the paper's merge). a and b must store fingerprints
// of the same length q+r, or Merge returns an error wrapping
// ErrIncompatible; their q may differ. The result has the larger q,
// doubled until its load is at most DefaultMaxLoad (r shrinking as q
// grows: the fingerprints keep their length).
func Merge(a, b *Filter) (*Filter, error) {
	p := a.q + a.r
	if b.q+b.r != p {
		return nil, fmt.Errorf("merge quotient filters of %d-bit and %d-bit fingerprints: %w", p, b.q+b.r, ErrIncompatible)
	}
	n := a.n + b.n
	q := max(a.q, b.q)
	for q+1 < p && q < MaxQuotientBits && float64(n) > DefaultMaxLoad*math.Ldexp(1, int(q)) {
		q++
	}
	if err := checkShape(q, p-q); err != nil {
		return nil, err
	}
	ca, cb := a.Cursor(), b.Cursor()
	x, okx := ca.Next()
	y, oky := cb.Next()
	g, err := build(q, p-q, n, func() (uint64, bool) {
		switch {
		case okx && (!oky || x <= y):
			v := x
			x, okx = ca.Next()
			return v, true
		case oky:
			v := y
			y, oky = cb.Next()
			return v, true
		}
		return 0, false
	})
	if err != nil {
		return nil, fmt.Errorf("merge quotient filters: %w", err)
	}
	return g, nil
}
