package ccf

import (
	"fmt"

	"github.com/flowmon/flowmon/internal/hashmix"
)

// Class is how an element of the local multiset A compares with the
// remote multiset B (Section 4.1's four sets, seen from A).
type Class uint8

const (
	// Same: the element has the same multiplicity in A and B.
	Same Class = iota
	// OnlyHere: the element is in A \ B; A sends it with its multiplicity.
	OnlyHere
	// HereMore: in both, more occurrences in A (B will replicate it).
	HereMore
	// ThereMore: in both, more occurrences in B (A replicates it locally).
	ThereMore
)

var classNames = [...]string{"same", "only-here", "here-more", "there-more"}

func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// Classify is the decision of Algorithm 4 for one element with local
// multiplicity local and remote answer remote.
func Classify(local, remote uint64) Class {
	switch {
	case remote == 0:
		return OnlyHere
	case remote > local:
		return ThereMore
	case remote < local:
		return HereMore
	}
	return Same
}

// Query is the query-based method (Section 4.2, Algorithm 4): it asks the
// remote filter for an element of the local root set, given its exact local
// multiplicity, and returns the class and the remote count. Errors are one
// sided: a false positive or a merged fingerprint makes an element of
// A \ B look present, never the reverse.
func Query(remote *Filter, key, local uint64) (Class, uint64) {
	r := remote.Count(key)
	return Classify(local, r), r
}

// Compatible reports, as an error wrapping ErrIncompatible, whether f and g
// differ in shape: fingerprint and counter bits, bucket size, seed, buckets
// or levels. Decode needs compatible filters; Query needs none.
func (f *Filter) Compatible(g *Filter) error {
	a, b := f.sh, g.sh
	switch {
	case a.f != b.f || a.c != b.c || a.b != b.b:
		return fmt.Errorf("f/c/b %d/%d/%d vs %d/%d/%d: %w", a.f, a.c, a.b, b.f, b.c, b.b, ErrIncompatible)
	case f.opts.Seed != g.opts.Seed:
		return fmt.Errorf("different seeds: %w", ErrIncompatible)
	case f.levels[0].m != g.levels[0].m:
		return fmt.Errorf("%d vs %d buckets: %w", f.levels[0].m, g.levels[0].m, ErrIncompatible)
	case len(f.levels) != len(g.levels):
		return fmt.Errorf("%d vs %d levels: %w", len(f.levels), len(g.levels), ErrIncompatible)
	}
	return nil
}

// each calls fn for every stored element of f: its level, one of its
// buckets, its fingerprint and its count.
func (f *Filter) each(fn func(level int, bucket, fp, count uint64)) {
	for l := range f.levels {
		t := &f.levels[l]
		n := t.m * uint64(f.sh.b)
		for k := range n {
			if v := f.sh.get(t, k); v != 0 {
				fn(l, k/uint64(f.sh.b), v&f.sh.fpMask, v>>f.sh.f)
			}
		}
		for _, e := range t.stash {
			fn(l, e.bucket, e.fp, e.count)
		}
	}
}

// countAt returns the count of fingerprint fp stored in bucket i (or its
// alternate) of level l, 0 if absent.
func (f *Filter) countAt(l int, i, fp uint64) uint64 {
	t := &f.levels[l]
	if loc := f.sh.find(t, fp, i); loc != locNone {
		return f.sh.count(t, loc)
	}
	return 0
}

// Decoded is the result of the decoding-based method (Section 4.3,
// Algorithm 5) run at A: A's filter with every slot labelled by the count
// of the same fingerprint in the same buckets of B's filter. A slot whose
// remote count equals its own is the "eliminated" common element; 0 marks
// A \ B; a larger remote count marks an element B holds more of.
type Decoded struct {
	local  *Filter
	remote [][]uint64 // per level: remote count of each local slot, then of each stash entry

	// OnlyThere and OnlyThereTotal count the elements of B \ A and their
	// occurrences: remote slots whose fingerprint is absent from the same
	// buckets of A. They are found without their keys, so they can be
	// counted but not named.
	OnlyThere, OnlyThereTotal uint64
}

// Decode runs the elimination phase of Algorithm 5 on local and remote,
// which must be Compatible. Both filters are only read.
func Decode(local, remote *Filter) (*Decoded, error) {
	if err := local.Compatible(remote); err != nil {
		return nil, fmt.Errorf("decode multiset difference: %w", err)
	}
	d := &Decoded{local: local, remote: make([][]uint64, len(local.levels))}
	b := uint64(local.sh.b)
	for l := range local.levels {
		t := &local.levels[l]
		rc := make([]uint64, t.m*b+uint64(len(t.stash)))
		for k := range t.m * b {
			if v := local.sh.get(t, k); v != 0 {
				rc[k] = remote.countAt(l, k/b, v&local.sh.fpMask)
			}
		}
		for j, e := range t.stash {
			rc[t.m*b+uint64(j)] = remote.countAt(l, e.bucket, e.fp)
		}
		d.remote[l] = rc
	}
	remote.each(func(l int, i, fp, c uint64) {
		if local.countAt(l, i, fp) == 0 {
			d.OnlyThere++
			d.OnlyThereTotal += c
		}
	})
	return d, nil
}

// Classify is the identification phase of Algorithm 5 for an element of
// A's root set: it finds the element's slot in A's filter and returns the
// class given by the slot's label (comparing the two filters' counters)
// and the remote count. An element missing from A's filter (an insertion
// refused with ErrFull) is reported as Same with remote count 0: the filter
// cannot say anything about it.
func (d *Decoded) Classify(key uint64) (Class, uint64) {
	f := d.local
	fp, a := f.sh.derive(key, f.opts.Seed)
	for l := range f.levels {
		t := &f.levels[l]
		i1 := hashmix.Reduce(a, t.m)
		loc := f.sh.find(t, fp, i1)
		if loc == locNone {
			continue
		}
		idx := loc
		if loc&locStash != 0 {
			idx = t.m*uint64(f.sh.b) + loc&^locStash
		}
		r := d.remote[l][idx]
		return Classify(f.sh.count(t, loc), r), r
	}
	return Same, 0
}
