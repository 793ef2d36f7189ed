// Package kbf implements the key-value Bloom filter (kBF) of Xiong, Yao, Cao
// and He, "kBF: a Bloom Filter for Key-Value Storage with an Application on
// Approximate State Machines" (INFOCOM 2014), and improves on it.
//
// # Cells and codes (Section III-C, III-E)
//
// The filter is an array of m cells. A cell is a counter (CounterBits, 3 in
// the paper) and an encoding part (the rest of a 16- or 32-bit cell, 29 bits
// in the paper). Each value v in [0, Values) has a code b[v]; the codes are
// chosen so that all codes and all XORs of two distinct codes are distinct
// and nonzero. A key is hashed (double hashing of its 64-bit hash) to k
// cells; Insert increments their counters and XORs the code in, Delete
// decrements and XORs it out (a XOR a = 0), Update XORs old and new codes.
//
// Two encoders are provided:
//
//   - Greedy, the paper's Algorithm 1: candidates 1, 2, 3, ... admitted when
//     neither they nor their XORs with admitted codes hit the set of codes
//     and pairwise XORs. P bits hold at most n with 2^P >= n(n-1)/2 + n
//     codes (the counting bound). The paper keeps that set in a
//     conventional Bloom filter; here it is a bitmap over the 2^P code
//     space, the same structure with one identity hash and no false
//     positives, so no admissible candidate is rejected by a false hit.
//     Measured (TestGreedyFigure2): 100 codes need 15 bits (bound 13), 256
//     need 18 (16), 512 need 21 (18), 1024 need 24 (20), 2048 need 27 (22),
//     3000 need 28 (23), 4096 need 29 (24), 8192 need 32 (26). The paper
//     reports 30 bits for 2^14 codes (bound 28); the exact search already
//     needs 32 for 2^13 and grows by 2-3 bits per doubling, so 2^14 codes
//     would need about 34, more than a 32-bit cell holds.
//     Decoding a pair scans the N codes (O(N)); the three-way decode scans
//     them against the pairwise-XOR bitmap (the paper's filter L).
//     Codes are increasing, so the reverse (encoding, value) table is the
//     code table itself, searched by the paper's quadratic regression
//     (Section III-H) or by binary search.
//
//   - Sidon: "all pairwise XORs distinct" says the codes form a Sidon set
//     in GF(2)^P. The codes (x, x^3) for nonzero x in GF(2^q) form one with
//     2^q - 1 codes in 2q bits, at the counting bound (16383 codes in 28
//     bits). x = 0 is left out: (0, 0) reads as an empty cell, and a pair
//     (0, y) would XOR to a code. Two superimposed codes decode directly:
//     with s = x+y and t = x^3+y^3, xy = t/s + s^2, so x, y are the roots
//     of z^2 + s z + xy; with z = s w this is w^2 + w = xy/s^2, a
//     GF(2)-linear system solved by a precomputed echelon form, with no
//     table of pairs and no search. A pair XOR is never a code
//     ((x+y)^3 = x^3+y^3 forces xy(x+y) = 0), so every rule below holds.
//     The field is the widest whose 2q-bit codes fit in the cell (q <= 14):
//     values 1..n are then a sparse subset of the field, which makes a wrong
//     candidate less likely to pass a cell's consistency check.
//
// # Query (Algorithm 3, Section III-F)
//
// A cell with counter 0 means the key is absent (the Bloom rule). Each
// cell's contents define a candidate set for the key's code: counter 1, the
// code itself; counter 2, the unique pair the XOR decodes to; counter 3, the
// triples found through L; more, anything. The key's code is in the
// intersection of its k cells' sets. Query generates candidates from the
// cheapest cell and keeps those consistent with every cell: one survivor is
// the answer, none proves the key absent, several give Unknown ("don't
// know"). The paper's first rule (return a singleton's code) does not look
// at the other cells; here a singleton is checked against them, so
// disagreeing cells give Absent or Unknown and never a silent wrong value.
// QueryPaper keeps the rules as printed, for comparison: its false-positive
// rate is the Bloom rate p (paper Fig. 7), while the checked decode lets
// almost no absent key through (none of 10^6 at n = 10^6 in
// docs/results/kbf.md), because a wrong candidate must also fit the XOR
// contents of the other k-1 cells.
//
// # Counter saturation
//
// A counter that reaches its maximum (7 for 3 bits) becomes sticky: it is
// never incremented, decremented or trusted again, and Stats.Saturated
// counts it. Without this, an 8th insert would wrap the counter to 0 and a
// later delete would corrupt the cell. The cost: a saturated cell never
// empties (it adds to the false-positive rate after deletes) and never
// helps decode; at the p-capacity (rho = 1, cell load Poisson(ln 2)) the
// share of cells with 7 or more codes is 8.3e-6 for 3-bit counters (about
// 120 cells of 14.4 million at n = 1e6, p = 1e-3), 5.9e-4 at rho = 2.
//
// # Growth and compaction (Section III-G)
//
// Chain adds a new filter of the same size and seed when the newest one
// reaches its p-capacity; queries look at every filter. Merge builds the
// union of two filters of the same shape by XORing cells and adding
// counters: no key is lost, but the load adds up, so fewer keys decode.
//
// # Analysis (Section IV)
//
// m = -n ln p / (ln 2)^2, k = -ln p / ln 2, p-capacity = -m (ln 2)^2 / ln p,
// the cell load is Poisson(rho ln 2) with rho = nk / (m ln 2), and the
// share of cells holding three or more codes is
// P_n(rho) = 2^(-rho-1) (-rho^2 ln(2)^2 + 2^(rho+1) - rho ln 4 - 2), 0.0333
// at rho = 1. See CellsFor, OptimalK, PCapacity, OverloadProb and
// GlobalDecodability.
//
// # Layouts
//
// Standard spreads a key's k cells over the whole array (m prime, so double
// hashing gives k distinct cells): k cache misses, issued in parallel.
// Blocked places them in g = max(3, ceil(2k/L)) cache lines of L cells (at
// most 4; Options.BlockLines overrides): g misses instead of k. The lines
// are chosen by double hashing over a prime number of lines, the cells
// inside a line as a random subset of it (lineperm.go: the first cells of
// one of 1024 fixed random permutations), so that keys sharing a line
// share cells only by chance. At p = 1e-3 (docs/results/kbf.md and
// kbf-10m.md) three lines leave no don't-know answers, as the standard
// layout, at 1M and at 10M keys; two lines leave 2.6e-6 at the same
// memory, and with 25% more cells none at 1M keys and 5e-7 at 10M. (An
// offset and an odd stride inside the line leaves several times as many:
// docs/results/kbf-layouts.md, "Placement inside a line".) Past the
// p-capacity the blocked layout degrades faster: at twice the load (m/2)
// three lines leave 1e-4 don't-know answers, the standard layout 7e-6.
//
// A key's cells in a line are a set, and each test a query makes is of one
// cell against the candidate code, so where the CPU has AVX-512 the
// blocked layout (32-bit cells, Sidon codes, k <= 16) tests all a key's
// cells together: they are permuted from its lines into one vector
// register, by lane indices built from the hash while the lines load, and
// tested there with one gather; the pair checks follow in the same
// assembly (lines.go, lines_amd64.s). Without that, the layout alone gains
// little: the standard layout's k reads are independent and the CPU
// overlaps them, and a query cell by cell computes about as long as it
// waits for memory. At 10M keys (docs/results/kbf-layouts.md has the
// figures, the machine and the command):
//
//   - the machine's ceiling (BenchmarkLineReads: random lines of the same
//     array, no decode): ten lines per key cost about three times what
//     three lines cost and five times what two cost;
//   - QueryBatch (below) with three lines at m cells is about four times
//     as fast as the standard layout, with its error rates; two lines at
//     1.25m cells about five times; two lines queried cell by cell only a
//     third faster;
//   - one Query at a time gains less, two and a half times with three or
//     two lines. A query's checks need the lines' contents, so they wait
//     in the CPU until the misses return, and the next queries' reads
//     cannot start: a few quick instructions that need two random reads
//     make them cost several times as much (BenchmarkDependentWork), and
//     without the checks the gain one at a time stays small. QueryBatch
//     and Prefetch let the misses of several keys overlap instead.
//
// # Batched queries
//
// QueryBatch answers a batch of keys exactly as Query would, but
// prefetches the lines of the key batchAhead places ahead (PREFETCHT0; one
// per cell in the standard layout, one per line in the blocked one) while
// a key decodes, so the misses of several keys overlap. Both layouts gain
// from it: a batched query costs about half a single one. A caller that
// must query one key at a time but knows the next ones (flowmon's workers:
// a packet's state update comes before the next packet's lookup) calls
// Prefetch a few keys ahead instead, which nearly halves a query's time in
// either layout (BenchmarkQueryRatio's pf figures,
// docs/results/kbf-layouts.md).
//
// The decode of a stored key nearly always starts from a cell holding it
// alone (counter 1). For Sidon codes that path (fastpath.go) checks the k
// cells without a branch on their counters, with one small table lookup
// per cell, and decodes the counter-3 cells' pairs last, on logarithms
// (isPair, also without a branch). The line form (lines.go) does the
// same tests, pair checks included, in vector registers and assembly.
//
// Large cell arrays are advised to use transparent huge pages (Linux), so
// a random cell access is a cache miss without a 4 KiB TLB miss.
//
// A Filter is not safe for concurrent use. Per-operation methods,
// QueryBatch included, allocate nothing.
package kbf
