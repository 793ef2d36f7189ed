package ccf

import (
	"fmt"
	"slices"
)

// Clone returns a deep copy of f.
func (f *Filter) Clone() *Filter {
	g := *f
	g.levels = make([]table, len(f.levels))
	for i, t := range f.levels {
		g.levels[i] = table{m: t.m, used: t.used, words: slices.Clone(t.words),
			stash: append(make([]entry, 0, cap(t.stash)), t.stash...)}
	}
	return &g
}

// Merge adds g's multiset to f's (multiplicities add up, saturating), for
// example to join the filters of workers that each count a disjoint shard
// of the flows. g must be Compatible with f. Every element of g keeps its
// level and bucket pair, so no key is needed. If f cannot hold the result
// Merge returns an error wrapping ErrFull and f is unchanged.
func (f *Filter) Merge(g *Filter) error {
	if err := f.Compatible(g); err != nil {
		return fmt.Errorf("merge counting cuckoo filters: %w", err)
	}
	h := f.Clone()
	var err error
	g.each(func(l int, i, fp, c uint64) {
		if err != nil {
			return
		}
		t := &h.levels[l]
		if loc := h.sh.find(t, fp, i); loc != locNone {
			h.add(t, loc, c)
			return
		}
		if !h.sh.place(t, fp, i, c, h.opts.MaxKicks, &h.rng) {
			err = fmt.Errorf("merge counting cuckoo filters: level %d: %w", l, ErrFull)
			return
		}
		h.distinct++
		h.total += c
	})
	if err != nil {
		return err
	}
	h.saturations += g.saturations
	*f = *h
	return nil
}
