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
// O(log(n/M)/B) block writes amortized (Section 2).
//
// # Background merges
//
// The paper merges inside the insertion that finds QF0 full, so that
// insertion stalls for the merge's length (Section 3 measured stalls,
// the largest while nearly all the levels merged into the last; Section 2
// notes that a CF, like a COLA, can be deamortized to remove them).
// Options.SyncMerge keeps the paper's merge. By default the cascade does
// the simplest form of deamortization, a double-buffered QF0: RAMBytes
// holds two QF0s of half the budget each (each the QF0 SyncMerge would
// make of half the budget, usually one quotient bit less; the levels'
// shapes follow from it, so a cascade with background merges is the
// synchronous cascade of half its budget). When the
// active QF0 is full it is frozen (read-only) and handed to a merge on
// its own goroutine, and the other QF0 (allocated by the last merge)
// takes insertions at once; lookups probe the active QF0, the frozen one,
// then the levels. When the merge commits (its manifest written) the new
// level set is installed and the frozen QF0 dropped. One merge runs at a
// time: if the active QF0 fills before the merge ends, Insert waits for
// it and TryInsert returns ErrBusy without inserting, so a caller on a
// packet path never waits (it counts what it could not record). So the
// double buffer hides a merge that ends before the other QF0 fills: at a
// rate of r insertions per second, a merge shorter than cap0/r. A merge
// into level i reads and writes about cap0·2^i fingerprints, so with the
// cascade deep enough the largest merges outlast a QF0's fill at high
// rates; the paper's full deamortization (merging a little at each
// insertion, the COLA's) would bound that too, and is not implemented.
// A merge that fails (a disk error) leaves its QF0 frozen and read; the
// next insertion returns the error, and the one that next needs room
// runs the merge again (Sync, Seal and Close run it too). Seal merges
// what QF0 holds and frees both QF0s, for a filter no longer inserted
// into.
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
// CRC-32Cs of its checksum table and header; and "qf0": the active QF0's
// MarshalBinary as of the last Sync or Close (empty after a merge). A
// level file is written once, under a new generation's name, and synced
// before the manifest naming it replaces the old one: the manifest is the
// commit point. Merged levels' files are removed after, once no lookup
// reads them. Open removes the level files the manifest does not name: a
// crash leaves the old manifest and files, or the new ones. A directory
// without a manifest (and without level files) is an empty filter: its
// manifest is first written by a merge, Sync or Close.
//
// # Crashes
//
// The manifest is written by Sync and Close (the levels and the active
// QF0) and by each merge's commit (the levels, now holding the merged
// QF0, and no QF0); only one of them runs at a time. A crash therefore
// keeps every insertion made before the last Sync or Close returned, and
// every insertion made before the freezing of a QF0 whose merge
// committed, and loses the others: those of the active QF0 since the last
// Sync, and, when the crash comes before a running merge commits, those
// the frozen QF0 received after the last Sync (Sync and Close wait for a
// running merge, so they never acknowledge what a merge could lose).
// With SyncMerge the same holds with no frozen QF0: what QF0 gained
// since the last Sync, Close or merge is lost, as the agent's RAM state
// is.
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
// A Filter is safe for concurrent use. Insertions and deletions hold it
// while they change the active QF0; lookups hold it only to probe the
// active QF0 and take a reference on the view (the frozen QF0 and the
// levels, which no one changes), and read the levels' pages alongside
// each other, the insertions and a background merge. A merge holds the
// filter only to install its result; with SyncMerge it holds it for the
// whole merge, so every call waits, as in the paper. A directory is used
// by one Filter at a time (an flock on LOCK; Open returns ErrLocked
// otherwise).
package cascade
