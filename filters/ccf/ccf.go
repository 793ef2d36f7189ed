package ccf

import (
	"fmt"

	"github.com/flowmon/flowmon/internal/hashmix"
)

// Filter is a counting cuckoo filter: a multiset of 64-bit key hashes,
// each stored as a fingerprint and a multiplicity counter.
//
// A Filter is not safe for concurrent use by several goroutines when one of
// them modifies it; concurrent Count, Lookup, MarshalBinary and the
// synchronization functions on a filter nobody modifies are safe.
type Filter struct {
	opts   Options // with defaults
	sh     shape
	levels []table
	rng    uint64

	distinct    uint64 // elements stored (slots + stash)
	total       uint64 // sum of the stored counters
	saturations uint64 // increments clamped at the saturated counter
}

// New returns an empty filter sized by o.
func New(o Options) (*Filter, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("new counting cuckoo filter: %w", err)
	}
	o = o.withDefaults()
	f := &Filter{opts: o, sh: newShape(o.FingerprintBits, o.CounterBits, o.BucketSize)}
	f.levels = []table{f.sh.newTable(o.buckets(), o.StashSize)}
	f.rng = o.Seed | 1
	return f, nil
}

// NewSized returns a filter for n distinct elements with lookup
// false-positive rate fpRate, fixed memory, and default other options.
func NewSized(n uint64, fpRate float64) (*Filter, error) {
	return New(Options{Capacity: n, FPRate: fpRate})
}

// NewLike returns an empty filter of the same shape as g (one level):
// the filter a peer must build to be compared with g.
func NewLike(g *Filter) *Filter {
	f := &Filter{opts: g.opts, sh: g.sh, rng: g.opts.Seed | 1}
	f.levels = []table{f.sh.newTable(g.levels[0].m, g.opts.StashSize)}
	return f
}

// Options returns the options the filter was built with, defaults filled
// in and Buckets set to the level-0 bucket count.
func (f *Filter) Options() Options {
	o := f.opts
	o.Buckets = f.levels[0].m
	return o
}

// Insert adds n occurrences of key and returns its new multiplicity. A key
// already present (or colliding with a present fingerprint in one of its
// buckets) has its counter raised; a counter that would pass 2^c-1 stays
// at 2^c-1 (sticky saturation, counted in Stats). A new key is placed by
// Algorithm 1; if every level and stash is full the filter grows by one
// level when Options.MaxLevels allows it, and otherwise Insert returns 0
// and an error wrapping ErrFull with the filter unchanged. Insert(key, 0)
// inserts nothing and returns the current multiplicity.
func (f *Filter) Insert(key, n uint64) (uint64, error) {
	fp, a := f.sh.derive(key, f.opts.Seed)
	for li := range f.levels {
		t := &f.levels[li]
		i1 := hashmix.Reduce(a, t.m)
		if loc := f.sh.find(t, fp, i1); loc != locNone {
			return f.add(t, loc, n), nil
		}
	}
	if n == 0 {
		return 0, nil
	}
	c := f.clamp(0, n)
	for li := range f.levels {
		t := &f.levels[li]
		i1 := hashmix.Reduce(a, t.m)
		if f.sh.place(t, fp, i1, c, f.opts.MaxKicks, &f.rng) {
			f.distinct++
			f.total += c
			return c, nil
		}
	}
	if len(f.levels) >= f.opts.MaxLevels {
		// ErrFull itself: a full window refuses every packet of every new
		// flow, and formatting an error each time would allocate on the
		// packet path, a cost a replay past the window's capacity shows
		// (docs/results/pipeline.md, "A full flow-count window").
		return 0, ErrFull
	}
	f.levels = append(f.levels, f.sh.newTable(f.levels[0].m<<len(f.levels), f.opts.StashSize))
	t := &f.levels[len(f.levels)-1]
	i1 := hashmix.Reduce(a, t.m)
	f.sh.place(t, fp, i1, c, f.opts.MaxKicks, &f.rng)
	f.distinct++
	f.total += c
	return c, nil
}

// Prefetch starts loading the memory that Insert, Count or Lookup of key
// will read first, the cache lines where its two candidate buckets in
// level 0 begin, and returns without waiting for them. A table larger
// than the cache costs a miss or two per key; a caller that knows its
// next keys (the engine's batch of packets) prefetches a few keys ahead,
// so that their misses overlap each other and the work on the keys before
// them. It changes nothing and allocates nothing; later levels, which a
// grown filter also searches, are not prefetched.
func (f *Filter) Prefetch(key uint64) {
	fp, a := f.sh.derive(key, f.opts.Seed)
	t := &f.levels[0]
	i1 := hashmix.Reduce(a, t.m)
	f.sh.prefetch(t, i1, alt(i1, fp, t.m))
}

// clamp returns cur+n saturated at cMax, counting a saturation.
func (f *Filter) clamp(cur, n uint64) uint64 {
	if n > f.sh.cMax-cur {
		f.saturations++
		return f.sh.cMax
	}
	return cur + n
}

// add raises the counter at loc by n (saturating) and returns it. A slot
// is read once and written once: the fingerprint is kept from the read.
func (f *Filter) add(t *table, loc, n uint64) uint64 {
	if loc&locStash != 0 {
		e := &t.stash[loc&^locStash]
		c := f.clamp(e.count, n)
		f.total += c - e.count
		e.count = c
		return c
	}
	v := f.sh.get(t, loc)
	cur := v >> f.sh.f
	if n == 0 {
		return cur
	}
	c := f.clamp(cur, n)
	f.sh.set(t, loc, v&f.sh.fpMask|c<<f.sh.f)
	f.total += c - cur
	return c
}

// locate finds key: its level and location, or ok false.
func (f *Filter) locate(key uint64) (t *table, loc uint64, ok bool) {
	fp, a := f.sh.derive(key, f.opts.Seed)
	for li := range f.levels {
		t := &f.levels[li]
		i1 := hashmix.Reduce(a, t.m)
		if loc := f.sh.find(t, fp, i1); loc != locNone {
			return t, loc, true
		}
	}
	return nil, 0, false
}

// Count returns key's multiplicity (Algorithm 3), 0 if absent. It may
// over-count: a false positive (probability at most 2b/2^f per level for an
// absent key) or a key sharing fingerprint and buckets with another one
// returns the other one's counter too. A saturated counter returns 2^c-1.
func (f *Filter) Count(key uint64) uint64 {
	t, loc, ok := f.locate(key)
	if !ok {
		return 0
	}
	return f.sh.count(t, loc)
}

// Lookup returns key's multiplicity and whether its counter is saturated,
// in which case the true multiplicity is at least the returned value.
func (f *Filter) Lookup(key uint64) (count uint64, saturated bool) {
	c := f.Count(key)
	return c, c == f.sh.cMax
}

// Contains reports whether Count(key) > 0.
func (f *Filter) Contains(key uint64) bool {
	_, _, ok := f.locate(key)
	return ok
}

// Delete removes key and all its occurrences (Algorithm 2) and reports
// whether it was present.
func (f *Filter) Delete(key uint64) bool {
	t, loc, ok := f.locate(key)
	if !ok {
		return false
	}
	f.total -= f.sh.count(t, loc)
	f.distinct--
	f.sh.clear(t, loc)
	return true
}

// Remove removes n occurrences of key and returns the multiplicity left.
// A key whose count reaches 0 is deleted. A saturated counter is left
// saturated: the true multiplicity is unknown, so it is never lowered.
func (f *Filter) Remove(key, n uint64) uint64 {
	t, loc, ok := f.locate(key)
	if !ok {
		return 0
	}
	cur := f.sh.count(t, loc)
	switch {
	case cur == f.sh.cMax:
		return cur
	case n >= cur:
		f.total -= cur
		f.distinct--
		f.sh.clear(t, loc)
		return 0
	default:
		f.sh.setCount(t, loc, cur-n)
		f.total -= n
		return cur - n
	}
}

// Reset empties the filter, keeping level 0's memory and dropping the
// levels grown since.
func (f *Filter) Reset() {
	t := &f.levels[0]
	clear(t.words)
	t.stash = t.stash[:0]
	t.used = 0
	f.levels = f.levels[:1]
	f.distinct, f.total, f.saturations = 0, 0, 0
	f.rng = f.opts.Seed | 1
}

// Stats describes a filter's content and memory.
type Stats struct {
	Distinct    uint64  // elements stored (fingerprints in slots and stashes)
	Total       uint64  // sum of the counters (the multiset's cardinality, less saturated excess)
	Slots       uint64  // slots over all levels
	Load        float64 // occupied slots / Slots
	Levels      int     // levels in use
	Stashed     int     // elements held in stashes
	Saturations uint64  // increments clamped at 2^c-1 since creation or Reset
	Bytes       uint64  // memory of the slot arrays
	Bits        uint64  // bits of the slots proper (slots * (f+c)), the paper's space
}

// Stats returns the filter's statistics.
func (f *Filter) Stats() Stats {
	s := Stats{Distinct: f.distinct, Total: f.total, Levels: len(f.levels), Saturations: f.saturations}
	var used uint64
	for i := range f.levels {
		t := &f.levels[i]
		s.Slots += t.m * uint64(f.sh.b)
		used += t.used
		s.Stashed += len(t.stash)
		s.Bytes += uint64(len(t.words)) * 8
	}
	s.Bits = s.Slots * uint64(f.sh.w)
	if s.Slots > 0 {
		s.Load = float64(used) / float64(s.Slots)
	}
	return s
}

// FalsePositiveBound returns the union bound (2b+s)/(2^f-1) per level
// (s the stash size) on the probability that Count of an absent key is not
// zero: a lookup compares one fingerprint, uniform over 2^f-1 values, with
// at most 2b slots and s stash entries (Fan et al.'s 2b/2^f, the paper's
// Eq. 6).
func (f *Filter) FalsePositiveBound() float64 {
	per := float64(2*f.sh.b+uint(f.opts.StashSize)) / float64(f.sh.fpMask)
	return per * float64(len(f.levels))
}
