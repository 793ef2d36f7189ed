package ccf

import (
	"github.com/flowmon/flowmon/internal/hashmix"
)

// The per-slot scan, which branches on whether a slot straddles two
// words, is the reference for find and empty: TestScanAgainstReference
// compares the two on random tables, and the benchmarks' impl=ref runs
// Insert on it in the same process as the branch-free scan, so the two
// are compared under the same load.

// getRef returns slot i's raw value, branching on whether it straddles
// two words.
func (s *shape) getRef(t *table, i uint64) uint64 {
	bit := i * uint64(s.w)
	k, off := bit>>6, bit&63
	v := t.words[k] >> off
	if off+uint64(s.w) > 64 {
		v |= t.words[k+1] << (64 - off)
	}
	return v & s.slotMask
}

// setRef stores v (already masked) in slot i.
func (s *shape) setRef(t *table, i, v uint64) {
	bit := i * uint64(s.w)
	k, off := bit>>6, bit&63
	t.words[k] = t.words[k]&^(s.slotMask<<off) | v<<off
	if off+uint64(s.w) > 64 {
		sh := 64 - off
		t.words[k+1] = t.words[k+1]&^(s.slotMask>>sh) | v>>sh
	}
}

// findRef looks for fp one slot at a time in buckets i1 and i2 and in the
// stash.
func (s *shape) findRef(t *table, fp, i1, i2 uint64) uint64 {
	b := uint64(s.b)
	for k := i1 * b; k < i1*b+b; k++ {
		if s.getRef(t, k)&s.fpMask == fp {
			return k
		}
	}
	if i2 != i1 {
		for k := i2 * b; k < i2*b+b; k++ {
			if s.getRef(t, k)&s.fpMask == fp {
				return k
			}
		}
	}
	for k := range t.stash {
		e := &t.stash[k]
		if e.fp == fp && (e.bucket == i1 || e.bucket == i2) {
			return locStash | uint64(k)
		}
	}
	return locNone
}

// emptyRef returns the first free slot of bucket i, or locNone.
func (s *shape) emptyRef(t *table, i uint64) uint64 {
	b := uint64(s.b)
	for k := i * b; k < i*b+b; k++ {
		if s.getRef(t, k) == 0 {
			return k
		}
	}
	return locNone
}

func (s *shape) placeRef(t *table, fp, i1, i2, c uint64, maxKicks int, rng *uint64) bool {
	if j := s.emptyRef(t, i1); j != locNone {
		s.setRef(t, j, s.pack(fp, c))
		t.used++
		return true
	}
	if j := s.emptyRef(t, i2); j != locNone {
		s.setRef(t, j, s.pack(fp, c))
		t.used++
		return true
	}
	if len(t.stash) == cap(t.stash) {
		return false
	}
	cur := i1
	if next(rng)&1 == 1 {
		cur = i2
	}
	for range maxKicks {
		k := cur*uint64(s.b) + hashmix.Reduce(next(rng), uint64(s.b))
		old := s.getRef(t, k)
		s.setRef(t, k, s.pack(fp, c))
		fp, c = old&s.fpMask, old>>s.f
		cur = alt(cur, fp, t.m)
		if j := s.emptyRef(t, cur); j != locNone {
			s.setRef(t, j, s.pack(fp, c))
			t.used++
			return true
		}
	}
	t.stash = append(t.stash, entry{bucket: cur, fp: fp, count: c})
	return true
}

// insertRef is Insert on the per-slot scan (without growth, which the
// benchmarks do not reach).
func (f *Filter) insertRef(key, n uint64) (uint64, error) {
	fp, a := f.sh.derive(key, f.opts.Seed)
	for li := range f.levels {
		t := &f.levels[li]
		i1 := hashmix.Reduce(a, t.m)
		if loc := f.sh.findRef(t, fp, i1, alt(i1, fp, t.m)); loc != locNone {
			var cur uint64
			if loc&locStash != 0 {
				cur = t.stash[loc&^locStash].count
			} else {
				cur = f.sh.getRef(t, loc) >> f.sh.f
			}
			if n == 0 {
				return cur, nil
			}
			c := f.clamp(cur, n)
			if loc&locStash != 0 {
				t.stash[loc&^locStash].count = c
			} else {
				f.sh.setRef(t, loc, f.sh.getRef(t, loc)&f.sh.fpMask|c<<f.sh.f)
			}
			f.total += c - cur
			return c, nil
		}
	}
	if n == 0 {
		return 0, nil
	}
	c := f.clamp(0, n)
	for li := range f.levels {
		t := &f.levels[li]
		i1 := hashmix.Reduce(a, t.m)
		if f.sh.placeRef(t, fp, i1, alt(i1, fp, t.m), c, f.opts.MaxKicks, &f.rng) {
			f.distinct++
			f.total += c
			return c, nil
		}
	}
	return 0, ErrFull
}
