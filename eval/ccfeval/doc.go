// Package ccfeval reproduces Section 6 of Li, Luo and Guo, "Multiset
// Synchronization with Counting Cuckoo Filters": synchronization accuracy
// and time of the counting cuckoo filter (query- and decoding-based, see
// filters/ccf) against the counting Bloom filter (filters/cbf) as the bits
// per element grow, and the occupancy a CCF reaches before its first
// failed insertion (the paper's Table of occupancies).
//
// # Workload
//
// Two hosts A and B hold multisets of random distinct 32-bit integers,
// hashed with XXH3 (the paper uses CityHash). Each root set has N elements
// (default 64,000) and A's cardinality is exactly 10N (640,000): every
// multiplicity starts at 10 and random unit transfers between elements
// spread them over [1, 255] with the total kept. A fraction OnlyFrac of
// each root set is on that host only; a fraction DiffFrac of the shared
// elements has a different multiplicity on B (A's ± up to 5); the rest is
// equal. B's cardinality is therefore close to, not exactly, 10N.
//
// # Synchronization and accuracy (Sections 4.1 and 6, Eq. 11)
//
// Each host classifies its own root set against the other's filter:
// only-here elements are sent with their multiplicity, elements the other
// holds more of are replicated locally up to the count read from the
// filter, the rest is left to the other side. After both hosts applied
// their actions the accuracy is the fraction of the union's distinct
// elements with the same multiplicity on both hosts. A false positive or a
// merged fingerprint shows as an element never sent or replicated to a
// wrong count.
//
// # Space
//
// Bits per element is the filter's bits over N: slots*(f+c)/N for the
// CCF (c = 8 since no multiplicity passes 255; buckets sized for a 0.95
// load, so bpe = 1.053*(f+c)) and cells*c/N for the CBF (8-bit counters,
// k = round((m/N) ln 2) hashes). Added bits lengthen the CCF's
// fingerprints and the CBF's vector, as in the paper. A slot is at most
// 64 bits, so the CCF stops at f = 56 (bpe 67.4): rows above show that
// filter.
package ccfeval
