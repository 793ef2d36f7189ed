// Package cascade implements the Cascade Filter (CF) of Bender et al.,
// "Don't thrash: how to cache your hash on flash" (HotStorage 2011,
// Section 2, "From QF to CF"): an approximate membership structure that
// grows past RAM onto disk, for flowmon's long-term flow history (has this
// flow been seen in the last months?). It is built from quotient filters
// (package qf).
//
// # Structure
//
// An in-RAM quotient filter QF0 takes every insertion. Below it, on disk,
// levels 1, 2, ... are quotient filters of doubling size, as in a
// cache-oblivious lookahead array (COLA): level 1 has QF0's 2^q0 slots and
// level i has 2^(q0+i-1), the sum of the levels above it, so each level is
// either empty or about as full as QF0 was. When QF0 reaches its maximum
// load (Options.MaxLoad, 3/4 by default, the paper's Figure 2), it is
// merged with levels 1..i-1 into the smallest empty level i, in one
// sequential pass over their sorted runs, written front to back (a qf
// Writer; the old levels are read front to back too); QF0 and those levels
// are then empty. A lookup probes QF0, then each non-empty level, smallest
// first, reading with pread only the page of the level's file that holds
// the slots from the cluster's start to the element's run (rarely two):
// one read per level, O(log(n/M)) reads, and an insert costs
// O(log(n/M)/B) block writes amortized (Section 2). Merges run inside the
// Insert that finds QF0 full, so that Insert stalls for the merge's
// length; the paper's deamortization is not implemented (nor was it in
// the paper's experiments).
//
// Every QF of a cascade stores values of p+1 bits: the p-bit fingerprint
// of a key (qf.Fingerprint: the top p bits of hashmix.Mix of its hash)
// and, below it, a tombstone bit. Level i has q0+i-1 quotient bits and so
// p+1-(q0+i-1) remainder bits: the values keep their length as levels
// grow (the paper's resizing by quotienting), and the deepest level p+1-q0
// has a one-bit remainder. The false-positive rate with n elements stored
// is that of a multiset of n p-bit integers, 1 - e^(-n/2^p) (Section 2);
// Options.FPRate and Capacity choose p for a rate at a size.
//
// # Deletes
//
// Section 2 allows deletes with tombstones "at the cost of a fourth
// tombstone bit": here the bit below the fingerprint. Delete removes a
// copy from QF0 if QF0 holds one; otherwise it inserts a tombstone into
// QF0. The filter is a multiset and counts: a lookup adds up copies minus
// tombstones over QF0 and every level and reports present when the sum is
// positive (with no tombstone anywhere it stops at the first copy); a
// merge cancels copies against tombstones of the same fingerprint and
// writes what is left, keeping surplus tombstones only while some deeper
// level may hold their copy. So a deleted element stops being reported at
// once, and its slots are reclaimed when the tombstone meets the copy.
// Delete does not check that the element is stored (that would cost a
// lookup's reads): deleting an element never inserted is the caller's
// error and hides a copy of any element that shares its fingerprint.
//
// # Directory
//
//	MANIFEST                      the list of levels and QF0's contents
//	level-II-GGGGGGGGGGGGGGGG.qfl  level II, written as generation G
//	LOCK                          flock'd while a Filter has the directory open
//
// MANIFEST is an internal/snapshot file, written as that package writes
// (a temporary file, fsync, rename over MANIFEST, fsync of the
// directory): its params are the shape (fingerprint bits, QF0's quotient
// bits, max load, page size), and a directory opened with options that
// give another shape is refused naming the first difference
// (ErrIncompatible). Its sections are "levels": per level its number,
// generation, q and r, slots, entries, tombstones, data pages and the
// CRC-32Cs of its checksum table and header; and "qf0": QF0's
// MarshalBinary as of the last Sync or Close (empty after a merge). A
// level file is written once, under a new generation's name, and synced
// before the manifest naming it replaces the old one; merged levels'
// files are removed after. Open removes the level files the manifest does
// not name: a crash leaves the old manifest and files, or the new ones.
// QF0's insertions since the last Sync, Close or merge are lost in a
// crash, as the agent's RAM state is.
//
// A level file is made of 4096-byte pages (integers little endian):
//
//	page 0: header
//	  0   8  magic "FMCFLEVL"
//	  8   1  version (1)
//	  9   1  level
//	  10  1  q
//	  11  1  r
//	  12  4  page size (4096)
//	  16  8  generation
//	  24  8  slots: 2^q and the overflow of the last cluster (a level does
//	         not wrap around: see qf.Writer)
//	  32  8  entries (tombstones included)
//	  40  8  tombstones
//	  48  8  D, data pages
//	  56  4  CRC-32C of the checksum table's pages (padding included)
//	  60  4  CRC-32C of bytes 0..59; the rest of the page is zero
//	pages 1..D: the slots packed in 64-bit words (qf's layout), zero padded
//	pages D+1..: the CRC-32C of each data page, 4 bytes each, zero padded
//
// # Damage
//
// Open checks every level the manifest names: the file's size, its
// header (checksum, and every field against the manifest), its checksum
// table, and each data page's checksum (one sequential read of the level;
// Options.QuickOpen skips the pages, which are then checked when a lookup
// or merge reads them: a lookup checks every page it reads). A damaged or
// missing level is refused: Open returns a *LevelError naming the level
// and its file and wrapping ErrCorrupt, and opens nothing, because
// dropping a level silently would turn its elements into false negatives,
// which an AMQ promises never to give. With Options.DropDamaged, Open
// drops the level instead: it renames the file NAME.damaged, rewrites the
// manifest without it and lists it in Stats.Dropped; the level's elements
// are then reported absent. A damaged manifest is always refused
// (ErrCorrupt, and the *snapshot.Error saying what is wrong).
//
// # Concurrency
//
// A Filter is not safe for concurrent use: one goroutine owns it. A
// directory is used by one Filter at a time (an flock on LOCK; Open
// returns ErrLocked otherwise).
package cascade
