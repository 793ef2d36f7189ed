// Package ccf implements the counting cuckoo filter (CCF) of Li, Luo and
// Guo, "Multiset Synchronization with Counting Cuckoo Filters", and the
// paper's two ways of finding the difference of two multisets.
//
// # Structure (Section 3.2)
//
// A CCF is a cuckoo filter whose slots hold a fingerprint and a counter: m
// buckets of b slots (default 4), each slot f+c bits. An element (here a
// 64-bit key hash, which the package mixes again) gets a fingerprint in
// [1, 2^f-1] and two candidate buckets i1 and i2 = alt(i1, fp), so that a
// stored fingerprint can move between its buckets without its key
// (partial-key cuckoo hashing, Eq. 1). The paper XORs the bucket index with
// a hash of the fingerprint, which needs m a power of two; flowmon uses
// alt(i, fp) = (H(fp) - i) mod m instead, also an involution, so that m is
// exactly ceil(n / (b*load)) and memory is not rounded up to a power of two.
//
// Insertion (Algorithm 1) raises the counter of the fingerprint if it is
// already in one of the two buckets; otherwise it takes an empty slot, or
// kicks a random resident to its other bucket, up to MaxKicks times.
// Popular cuckoo filters drop the last victim when the kicks run out (the
// resident silently disappears); here it goes to a small per-level stash
// that lookups also search. An insertion starts only if the stash has room,
// so a refused insertion (ErrFull) changes nothing. When a level is full
// and Options.MaxLevels allows, a new level with twice the buckets is
// opened (the dynamic cuckoo filter's growth); a new element goes to the
// first level with room and lookups search every level. Deletion
// (Algorithm 2) clears the slot and moves stashed victims back into
// buckets that have room; query (Algorithm 3) returns the slot's counter.
//
// # Counters
//
// A counter has c bits. An increment that would pass 2^c-1 leaves it at
// 2^c-1, which is sticky: Remove never lowers a saturated counter (its true
// value is unknown), Lookup reports it as saturated, and Stats counts every
// clamped increment. So the filter never under-counts silently: a count
// below 2^c-1 is exact up to collisions, a count of 2^c-1 means "at least".
//
// # Errors (Section 5.1)
//
// A lookup of an absent element compares its fingerprint with at most 2b
// slots and the stash: the false-positive probability is at most
// (2b+s)/(2^f-1) per level, about 2b/2^f, so f = ceil(log2(2b/ε)) bits
// reach a target ε (Eq. 6-8; Options.FPRate). Two elements with the same
// fingerprint and the same bucket pair (probability about 2/(m*2^f) per
// pair) share one slot: both read the sum of their counts. Without
// deletions counts are never under-estimated (no false negatives, no lost
// counts below saturation); deleting or removing a key that shares its slot
// with another removes the other's occurrences too, as in any cuckoo
// filter.
//
// # Synchronization (Section 4)
//
// Two hosts A and B exchange filters. The query-based method (Algorithm 4,
// Query) classifies every element of A's root set by asking B's filter:
// count 0 means A \ B (send it), a larger count means B holds more (A
// replicates it locally), a smaller one means A holds more (B will find it
// from its side). The decoding-based method (Algorithm 5, Decode) compares
// the two filters slot by slot first, labelling each of A's slots with B's
// counter for the same fingerprint in the same buckets; A's elements are
// then classified by their slot's label, and B's slots that match nothing
// in A count the elements of B \ A without naming them. Decode needs two
// filters of the same shape (ErrIncompatible otherwise); with grown levels
// an element may sit on different levels in the two filters, which Decode
// cannot see, so compare fixed-memory filters.
//
// Merge adds one filter's multiset to another of the same shape without
// the keys (each element keeps its level and bucket pair): workers that
// count disjoint shards of the flows are joined this way.
//
// # Concurrency
//
// A Filter is not safe for concurrent use while it is modified; readers of
// a filter nobody modifies (Count, Lookup, Query, Decode, MarshalBinary)
// may run concurrently.
package ccf
