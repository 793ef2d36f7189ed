// Package scbf is a scaling counting Bloom filter persisted in one
// memory-mapped file, after dablooms (Hines, bitly 2012: the paper's text
// is the project README; its C code, src/dablooms.c, fills the gaps). It
// holds flowmon's watchlists: sets of address hashes that grow, shrink and
// survive restarts.
//
// # Counting (section "Counting Bloom Filters: Solving Removals")
//
// Each sub-filter is a counting Bloom filter of 4-bit counters, two to a
// byte (the even counter in the high nibble, as dablooms lays them out).
// As in dablooms' counting_bloom_init, a sub-filter with target rate p
// and capacity n has k = ceil(log2(1/p)) hashes, each with its own
// partition of cpf = ceil(n ln(1/p) / (k ln²2)) counters, so the k
// counters of a key are always distinct. Once k is rounded up that size
// lands a hair above p at n elements (0.01002 for 0.01), so cpf then
// grows by 0.1% steps until (1 - (1 - 1/cpf)^n)^k ≤ p.
//
// "These four bit counters allow up to 15 items to share a counter"
// (section "Enter dablooms"). dablooms logs an increment past 15 and drops
// it, and later decrements the counter as if it had counted: the counter
// reaches 0 while an element still maps to it, a false negative. Here a
// counter at 15 is saturated: it stays at 15 and is never decremented, so
// the only cost of an overflow is a key that keeps testing present.
// Saturations counts the increments a saturated counter absorbed (the
// events dablooms logs), for the engine to export as a metric.
//
// # Probes
//
// The key is a 64-bit hash the caller already has (HashBytes hashes bytes
// with the flow hash's XXH3 and seed). Its probes come from
// internal/hashmix: h = Mix(key ^ seed), and probe j is
// Mix(h + (j+1)·Golden), the (j+1)th output of SplitMix64 seeded with h,
// reduced onto partition j. dablooms derives its probes by double hashing, h1 + j·h2
// (Kirsch and Mitzenmacher), as the other flowmon filters do; here that
// fails the deep sub-filters. Two keys whose h1 and h2 are both close
// share every one of their k counters, with a probability near
// 1/(k·cpf²) per pair that does not fall as k grows, while the targets
// do: the deep sub-filters' rates stay far above their targets and the
// overall rate passes P (docs/results/scbf.md, "Probes: one mixed output
// each, not double hashing"). With one mixed output per probe the overall
// rate stays at its estimate (TestScalesUnderRate). The cost is a Mix per
// probe; an absent key stops at the first zero counter, about two probes
// per sub-filter.
//
// # Scaling
//
// Sections "Scalable Bloom Filters: Solving Scale" and "Enter dablooms":
// a filter is a list of sub-filters of one capacity. Add and Remove take
// an id that increases with time (dablooms suggests a timestamp; ids need
// not be unique). Each sub-filter covers the ids from its first id up to
// the next sub-filter's, so the id names the one sub-filter that holds
// the element: "a scaling, counting, bloom filter is possible if upon
// additions and deletions one can correctly decide which bloom filter
// contains the element" (section "Problems with Mixing Scalable and
// Counting Bloom Filters"). When an Add brings an id above every id seen
// (maxID) and the newest sub-filter already holds Capacity elements, a new
// sub-filter starting at maxID+1 is appended, as in dablooms'
// scaling_bloom_add (which triggers at Capacity-1; here a sub-filter
// holds Capacity). An Add whose id is not above maxID goes to the
// sub-filter its id names even if that one is full, as in dablooms: ids
// that stop increasing overfill the filter instead of scaling it. Remove
// only lowers counters of the sub-filter the id names, and only if all k
// of them are non-zero: a key that sub-filter certainly does not hold is
// left alone (Remove reports false), where dablooms would decrement the
// counters that were set and corrupt other keys. Check scans the
// sub-filters newest to oldest.
//
// # Tightening ratio
//
// Sub-filter i (from 0) has target rate p_i = P (1-r) r^i, so the overall
// rate 1 - Π(1 - p_i) stays below Σ p_i < P however far the filter scales
// (Almeida, Baquero, Preguiça and Hutchison, "Scalable Bloom Filters",
// 2007, whom the paper cites). dablooms' code uses p_i = P r^(i+1) with
// r = 0.5 (ERROR_TIGHTENING_RATIO): the same schedule, since 1-r = r
// there. Its README picks r = 0.9 ("We found it sufficient to pick .9"),
// which in the code's schedule bounds the rate by P r/(1-r) = 9P, not P.
// Both ratios are selectable (RatioCode, RatioREADME). The default is 0.9
// with the (1-r) factor: docs/results/scbf.md (`flowmon eval scbf`)
// measures both overall rates within P at 1x, 10x and 100x the capacity,
// 0.5 at P already from 10x and 0.9 at about 0.6P there; 0.5 needs less
// memory up to 6 full sub-filters (23% less at one), but its k grows by
// one hash per sub-filter, so at 100x it takes 3.3 times the memory of
// 0.9 and 4 times the hashes per Add in the newest sub-filter. A filter
// that never scales past a few sub-filters is smaller with RatioCode.
// Rates floor at 2^-MaxHashes; from there on (sub-filter 249 at r = 0.5
// and P = 0.01) each further sub-filter adds at most 2^-256 to the bound.
//
// # The file (section "Enter dablooms": memory mapped, sequence numbers)
//
// Create and Open map one file; New keeps the same image on the heap. All
// integers are little endian, every field 8-byte aligned:
//
//	offset size field
//	0      4    magic "FSCB"
//	4      1    format version (1)
//	5      1    counter bits (4)
//	6      2    zero
//	8      8    capacity: elements per sub-filter
//	16     8    error rate P (IEEE 754 bits)
//	24     8    tightening ratio r (IEEE 754 bits)
//	32     8    hash seed
//	40     8    parameter checksum: XXH3-64 of bytes 0-39
//	48     8    dirty marker: 0 clean, 1 written since the last flush
//	56     8    boot id (hashed) of the machine that set the marker
//	64     8    seq: operations (Add and Remove calls) applied
//	72     8    clean seq: seq at the last flush
//	80     8    number of sub-filters (1..MaxFilters)
//	88     8    maxID: the largest id added
//	96     8    saturations
//	104    8    clean checksum, valid when the marker is 0: XXH3-64 of
//	            bytes 512-end seeded with XXH3-64 of bytes 64-103
//	112    192  the operation in flight (seq+1 while it runs): kind, key,
//	            sub-filter, and the values it changes before it changes
//	            them (sub-filter count, maxID, saturations, number of
//	            sub-filters and its k counters, two per byte)
//	304    208  zero
//	512    ...  sub-filters, each: first id (8), count of elements (8),
//	            k (8), cpf (8), then k·cpf counters, two per byte,
//	            padded with zeros to a multiple of 8 bytes
//
// Unlike dablooms' header (max_id and two sequence numbers), this one
// names its format and parameters, so Open needs no arguments and refuses
// a file of another version (ErrVersion), and both checksums refuse a
// damaged one (ErrCorrupt). Each sub-filter records its own shape, so a
// file reopens the same wherever its floating-point sizing would round
// differently.
//
// # Crash consistency
//
// dablooms clears its disk sequence number and syncs before the first
// change after a flush, and sets it after the flush: a file with the
// number cleared was being written and must be rebuilt. flowmon does the
// same with the dirty marker (set and msynced before a batch of changes;
// Flush msyncs everything, then clears the marker with the clean seq and
// checksum and msyncs the header) and goes one step further. A writer
// that dies without flushing (killed, or crashed) leaves its writes in
// the kernel's page cache, which keeps them for the file as long as the
// machine runs: only an operation cut short is incomplete. So every
// Add and Remove first records the values it will change and ends by
// storing seq+1; Open undoes an operation recorded but not ended, and the
// file then holds exactly operations 1..seq. Open reports one of:
//
//   - Clean: flushed after its last operation; the file holds 1..Seq.
//   - Consistent: the writer stopped after its last flush, on this boot
//     (the boot id is the kernel's, /proc/sys/kernel/random/boot_id);
//     the file holds 1..Seq exactly, Seq ≥ the last flush. The caller
//     replays what came after Seq, as dablooms' sequence numbers let one
//     "catch up".
//   - Rebuild: the marker is set and the machine has restarted since (or
//     cannot tell): writes after the last flush may be partly on disk,
//     counters may be too low, and the filter must be rebuilt from its
//     source (Open returns ErrRebuild).
//
// Growth extends the file (ftruncate, then mremap) inside an operation, so
// an undone Add also drops a sub-filter it had started.
//
// # Concurrency
//
// A Filter is not safe for concurrent use while it is modified, and an
// Add can move the mapping: the caller serializes. Check calls with no
// writer may run concurrently. A file is locked (flock) while a Filter
// holds it; a second Open fails with ErrLocked.
package scbf
