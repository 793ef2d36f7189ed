// Package qf implements the quotient filter (QF) of Bender, Farach-Colton,
// Johnson, Kuszmaul, Medjedovic, Montes, Shetty, Spillane and Zadok,
// "Don't thrash: how to cache your hash on flash" (HotStorage 2011,
// Section 2, "Design and Implementation"): an approximate membership
// structure that stores p-bit fingerprints by quotienting, and that two
// filters can be merged, or one resized, in one sequential pass without
// the keys. Package cascade builds the paper's Cascade Filter from it.
//
// # Keys and fingerprints
//
// A key is a 64-bit hash the caller already has (flowmon hashes each flow
// key once). Its fingerprint is the top p = q+r bits of the SplitMix64
// finalizer of it (internal/hashmix, the project's one mixer), so a
// caller's hash with uneven top bits still spreads evenly. The
// fingerprint splits into the quotient, its q most significant bits, and
// the remainder, its r least significant bits (Knuth's quotienting).
// *Fingerprint methods take fingerprints directly, for callers that
// derive their own (a Cascade Filter stores a tombstone bit below
// each).
//
// # Slots, runs and clusters (Section 2)
//
// The table has 2^q slots of r+3 bits: the remainder and three bits, in
// the paper's order (bit 0 up):
//
//	is_occupied      this slot is the canonical slot (the quotient) of some stored fingerprint
//	is_continuation  this slot holds a remainder of a run that is not the run's first
//	is_shifted       this slot holds a remainder that is not in its canonical slot
//
// A remainder goes to its canonical slot, or, by linear probing, to the
// first slot after it that keeps the table sorted. The remainders of one
// quotient are stored contiguously and in ascending order: a run. A
// cluster is a maximal sequence of non-empty slots whose first remainder
// is the only one in its canonical slot; it holds one or more runs, in
// the order of their quotients, so the i-th occupied slot of a cluster
// names the quotient of its i-th run. The table wraps around: a cluster
// may run past the last slot into slot 0.
//
// Lookup walks back from the quotient's slot to the start of its cluster
// (the first slot not shifted), then forward one run per occupied slot,
// to the quotient's run, and scans the run for the remainder. Insert puts
// the remainder in its place in the run and shifts the rest of the
// cluster one slot on, up to an empty slot (occupied bits stay with their
// slots, the other two move with their remainders). Delete removes it
// and shifts the rest back, up to an empty slot or a remainder in its
// canonical slot. None of the three allocates.
//
// The filter is a multiset: inserting a fingerprint already stored
// stores another copy (Count counts them), and Delete removes one copy,
// so two keys that share a fingerprint can each be inserted and deleted
// without losing the other. One slot always stays empty: Insert refuses
// (ErrFull) the insertion that would fill the table, which keeps every
// cluster's walk finite.
//
// # Merge and resize
//
// Fingerprints are stored in ascending order (by quotient, then by
// remainder), so two filters merge like two sorted arrays (Merge: a
// Cursor over each, one Writer laying the union out front to back), and a
// filter doubles or halves (Resize, Double) without the keys: a
// fingerprint is its quotient and remainder, and the new filter takes one
// more (or one fewer) of its bits as quotient. A Writer writes a linear
// table, in which the last cluster may run past the last slot into
// overflow slots instead of wrapping: a Cascade Filter keeps its on-disk
// levels that way, so that a merge is one sequential write and a lookup
// never reads the file's start for its end. Merge and Resize then fold
// the overflow back to the table's start.
//
// # False positives
//
// An absent element is reported present when one of the n stored
// fingerprints equals its own (a hard collision). With uniform
// fingerprints and load α = n/2^q that happens with probability
//
//	1 - (1 - 2^-p)^n ≈ 1 - e^(-α/2^r) ≤ α/2^r
//
// (the paper's analysis; FPRate). Options sizes a filter for a capacity
// at DefaultMaxLoad (3/4, the paper's example) and picks the least r
// meeting a target rate. Resizing keeps p, so the rate of n fingerprints
// does not change. TestFPRateMatchesPaper and `flowmon eval qf`
// (docs/results/qf.md) compare the measured rate with the formula.
//
// # Binary format
//
// MarshalBinary writes (integers little endian):
//
//	offset  size  field
//	0       4     magic "FMQF"
//	4       1     version (1)
//	5       1     q, quotient bits (1..MaxQuotientBits)
//	6       1     r, remainder bits (1..MaxRemainderBits, q+r <= 64)
//	7       1     reserved, 0
//	8       8     n, fingerprints stored (< 2^q)
//	16      8·W   the slots packed in W = ceil(2^q·(r+3)/64) words,
//	              slot i at bits [i·(r+3), (i+1)·(r+3)) of the stream
//	16+8·W  4     CRC-32C (Castagnoli) of every preceding byte
//
// UnmarshalBinary checks the length against q and r before allocating,
// then the checksum, then that the slots decode and are exactly the
// layout of the fingerprints they decode to; it leaves the receiver
// unchanged on any error (wrapping ErrCorrupt).
//
// # Concurrency
//
// A Filter is not safe for concurrent use: one goroutine owns it.
// Concurrent lookups (Contains, Count, Cursor, MarshalBinary) with no
// writer are safe.
package qf
