// Package cbf is a counting Bloom filter (Fan et al., "Summary cache"),
// the baseline against which the counting cuckoo filter (filters/ccf) is
// compared for multiset synchronization (Li, Luo and Guo, Sections 2.2, 5
// and 6).
//
// # Structure
//
// m cells of c bits (4, 8, 16 or 32). An element (a 64-bit key hash) is
// mapped to k cells by double hashing, g_i = h1 + i*h2 mod m (Kirsch and
// Mitzenmacher, the paper's Eq. 12). Add raises the k cells by the
// multiplicity, Remove lowers them, and Count returns the smallest of the
// k cells, as a count-min sketch does: never below the true multiplicity,
// above it when every cell is shared with other elements.
//
// # Maths
//
// With n distinct elements the probability that an absent element reads a
// non-zero count is the Bloom filter's (1 - e^{-kn/m})^k (the paper's
// Eq. 2), minimised by k = (m/n) ln 2, where it is 0.6185^(m/n). New
// sizes m = -n ln ε / (ln 2)^2 cells for a target ε. A counter is shared
// by the multiplicities of every element mapped to it, so c must cover
// their sum, not the largest multiplicity: a counter that would overflow
// saturates at 2^c-1 and stays there (Remove leaves it alone), and Stats
// counts those events, so Count may over-count but never wraps around.
//
// # Concurrency
//
// A Filter is not safe for concurrent use while it is modified; readers of
// an unmodified filter may run concurrently.
package cbf
