package ccf

import "github.com/flowmon/flowmon/internal/hashmix"

// table is one level: m buckets of b packed slots, and a small stash.
//
// Slots are w = f+c bits wide and packed little-endian into words: slot s
// occupies bits [s*w, s*w+w) of the bit string words[0], words[1], ...
// (bit k of the string is bit k%64 of words[k/64]). One spare word at the
// end, never encoded, lets an 8-byte load that starts in the last slot
// stay inside the array (scan.go). In a slot the fingerprint is the low f
// bits and the counter the high c bits; the all-zero slot is empty (a
// fingerprint is never 0).
type table struct {
	m     uint64   // buckets
	words []uint64 // packed slots + 1 pad word
	stash []entry  // victims that found no slot; cap is the stash size
	used  uint64   // occupied slots (stash not included)
}

// entry is a stashed element: one of its two buckets, its fingerprint and
// its count.
type entry struct {
	bucket, fp, count uint64
}

// shape is what every level of a filter shares.
type shape struct {
	f, c, b, w uint   // fingerprint bits, counter bits, slots per bucket, slot width
	fpMask     uint64 // 2^f - 1: also the number of fingerprint values
	cMax       uint64 // 2^c - 1: the saturated counter
	slotMask   uint64 // 2^w - 1

	// fpBytes and slotBytes say that a fingerprint (f <= 57 bits), or a
	// whole slot (w <= 57), is read with one unaligned 8-byte load (see
	// scan.go): only on a little-endian machine, where the words' bytes
	// are the bit string's bytes in order.
	fpBytes, slotBytes bool
}

func newShape(f, c, b int) shape {
	s := shape{f: uint(f), c: uint(c), b: uint(b), w: uint(f + c)}
	s.fpBytes = littleEndian && s.f <= maxByteLoad
	s.slotBytes = littleEndian && s.w <= maxByteLoad
	s.fpMask = 1<<s.f - 1
	s.cMax = 1<<s.c - 1
	if s.w == 64 {
		s.slotMask = ^uint64(0)
	} else {
		s.slotMask = 1<<s.w - 1
	}
	return s
}

// wordsFor returns the number of words (pad included) of m buckets.
func (s *shape) wordsFor(m uint64) uint64 {
	return (m*uint64(s.b)*uint64(s.w)+63)/64 + 1
}

func (s *shape) newTable(m uint64, stash int) table {
	return table{m: m, words: make([]uint64, s.wordsFor(m)), stash: make([]entry, 0, stash)}
}

func (s *shape) pack(fp, count uint64) uint64 { return fp | count<<s.f }

// derive turns a key hash into a fingerprint in [1, 2^f-1] and the value a
// from which each level's first bucket is reduced. The two come from two
// different bijections of the key, so they are independent for any f.
func (s *shape) derive(key, seed uint64) (fp, a uint64) {
	a, b := hashmix.Split(key, seed)
	return hashmix.Reduce(b, s.fpMask) + 1, a
}

// alt returns the other candidate bucket of fingerprint fp stored in
// bucket i: (H(fp) - i) mod m. Like the XOR of partial-key cuckoo hashing
// (the paper's Eq. 1) it is an involution, alt(alt(i)) = i, but it works
// for any m, so memory need not be rounded up to a power of two.
func alt(i, fp, m uint64) uint64 {
	h := hashmix.Reduce(hashmix.Mix(fp), m)
	j := h + m - i
	if j >= m {
		j -= m
	}
	return j
}

// locNone is returned by find when the fingerprint is absent; stash
// locations have locStash set and the stash index in the low bits.
const (
	locNone  = ^uint64(0)
	locStash = uint64(1) << 63
)

// count returns the counter at loc.
func (s *shape) count(t *table, loc uint64) uint64 {
	if loc&locStash != 0 {
		return t.stash[loc&^locStash].count
	}
	return s.get(t, loc) >> s.f
}

// setCount stores c (<= cMax, > 0) at loc.
func (s *shape) setCount(t *table, loc, c uint64) {
	if loc&locStash != 0 {
		t.stash[loc&^locStash].count = c
		return
	}
	s.set(t, loc, s.get(t, loc)&s.fpMask|c<<s.f)
}

// clear empties loc and then moves stashed victims back into buckets that
// have room.
func (s *shape) clear(t *table, loc uint64) {
	if loc&locStash != 0 {
		k := loc &^ locStash
		last := len(t.stash) - 1
		t.stash[k] = t.stash[last]
		t.stash = t.stash[:last]
		return
	}
	s.set(t, loc, 0)
	t.used--
	for k := 0; k < len(t.stash); {
		e := t.stash[k]
		j := s.empty(t, e.bucket)
		if j == locNone {
			j = s.empty(t, alt(e.bucket, e.fp, t.m))
		}
		if j == locNone {
			k++
			continue
		}
		s.set(t, j, s.pack(e.fp, e.count))
		t.used++
		last := len(t.stash) - 1
		t.stash[k] = t.stash[last]
		t.stash = t.stash[:last]
	}
}

// place inserts a new fingerprint with count c (Algorithm 1): an empty
// slot of either candidate bucket, i1 and then alt(i1, fp), else up to
// maxKicks relocations of random residents, the last victim going to the
// stash. It returns false, with t unchanged, only when both buckets are
// full and the stash is full, so no resident is ever lost.
func (s *shape) place(t *table, fp, i1, c uint64, maxKicks int, rng *uint64) bool {
	if j := s.empty(t, i1); j != locNone {
		s.set(t, j, s.pack(fp, c))
		t.used++
		return true
	}
	i2 := alt(i1, fp, t.m)
	if j := s.empty(t, i2); j != locNone {
		s.set(t, j, s.pack(fp, c))
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
		old := s.get(t, k)
		s.set(t, k, s.pack(fp, c))
		fp, c = old&s.fpMask, old>>s.f
		cur = alt(cur, fp, t.m)
		if j := s.empty(t, cur); j != locNone {
			s.set(t, j, s.pack(fp, c))
			t.used++
			return true
		}
	}
	t.stash = append(t.stash, entry{bucket: cur, fp: fp, count: c})
	return true
}

// next advances a xorshift64* generator (state never 0).
func next(x *uint64) uint64 {
	*x ^= *x >> 12
	*x ^= *x << 25
	*x ^= *x >> 27
	return *x * 2685821657736338717
}
