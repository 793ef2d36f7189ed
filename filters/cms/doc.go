// Package cms implements the count-min sketch of Cormode and Muthukrishnan
// ("An improved data stream summary: the count-min sketch and its
// applications", J. Algorithms 55(1), 2005) with the conservative update
// of Estan and Varghese ("New directions in traffic measurement and
// accounting", SIGCOMM 2002), for per-key counts in detection rules:
// "half-open flows per destination in a 10 s window".
//
// # Structure (Cormode and Muthukrishnan, Section 3)
//
// A sketch is d rows of w counters. A key (a 64-bit hash the caller
// already has) owns one counter in each row; Add raises the key's
// counters, Estimate returns the smallest of them. Memory is fixed when
// the sketch is made, whatever the number of keys (an attacker picks the
// keys):
//
//	Bytes = 4·w·d + 1024   (32-bit counters, and 16 padded shards of Total)
//
// For an additive error ε and a failure probability δ, New takes
//
//	w = ceil(e/ε),   d = ceil(ln(1/δ))
//
// (w is not rounded to a power of two: indexes are reduced onto [0, w)
// by Lemire's multiply-shift). Let N = Total() be the sum of every count
// added and a the true count of a key. Then (Theorem 1)
//
//	a <= Estimate <= a + ε·N   with probability at least 1 - δ.
//
// The lower bound always holds. For the upper one: in each row the other
// keys that share the key's counter add, in expectation, at most N/w <=
// ε·N/e, so by Markov's inequality more than ε·N with probability at most
// 1/e; the rows are independent, so all d of them exceed ε·N with
// probability at most e^-d <= δ.
//
// # Indexes
//
// Row r's counter of key h is Reduce(Mix(h1 + (r+1)·Golden), w) with
// h1 = Mix(h ^ seed) (internal/hashmix): the (r+1)-th output of SplitMix64
// seeded with h1. Every row has a hash of its own. Double hashing
// (h1 + r·h2, as the Bloom filters use) would be one mix cheaper, but two
// keys that share counters in two rows have close h1 and h2 and then share
// most of the other rows too: the rows stop being independent and the e^-d
// above no longer holds. The seed (Options.Seed, 0 by default so that a
// replay gives the same estimates) decides which keys share counters; a
// deployment whose keys an attacker chooses, to raise a victim's estimate,
// should set a secret seed.
//
// # Conservative update (Estan and Varghese, Section 3.3.2)
//
// Add(h, n) raises each of the key's counters only as far as it must: to
// max(c_i, m+n), where m is the smallest of them. The estimate grows by
// exactly n, like plain count-min's, while counters above the minimum,
// already inflated by other keys, grow less or not at all. Every counter
// then stays at or below plain count-min's counter with the same hashes,
// so the estimate is never higher than plain count-min's (and the bound
// above holds), and in practice it is much closer to the truth on skewed
// traffic. Counters saturate at 2^32-1: an estimate of MaxUint32 means "at
// least that".
//
// # Concurrency
//
// A Sketch is safe for concurrent use without locks: counters are
// sync/atomic words and Add, Estimate, Total and Reset may run at the same
// time from any goroutines. Add and Estimate allocate nothing. An Add
// reads the key's counters in row order, takes m = the smallest and j =
// its row (the lowest row on ties), raises every other counter of the key
// to at least t = m+n with a CAS loop, and then moves counter j from m to
// t with one CAS; if that CAS fails (counter j changed) it starts over.
// At the instant the CAS succeeds counter j goes from m to t while every
// other counter of the key is already at least t, so the key's estimate
// (the minimum) goes from exactly m to exactly t at that instant, and Add
// returns before = m, after = t. Hence, between Resets:
//
//   - The estimate of a key never decreases, and it never falls below the
//     sum of the counts added to the key (every Add raises it by its n at
//     its CAS, nothing lowers it; saturation aside).
//   - For every threshold T, at most one Add call of the key observes
//     before < T <= after: the intervals (before, after] of the key's Adds
//     are disjoint, each being the estimate's own step at a distinct
//     instant.
//   - Exactly one Add observes it when, since the last Reset, no Add of
//     another key has touched any of the key's counters: the key's counters
//     then start equal, its row-0 counter stays the smallest, every Add
//     moves that counter, and the estimate changes only at those CASes.
//
// The estimate can pass a threshold with no Add of the key seeing it only
// through collisions with other keys. An Add of another key can raise the
// key's last minimal counter itself (part of the overestimate the error
// bound above accounts for). And once other keys have left the key's
// counters unequal, three or more overlapping Adds of the key can do it
// too, one Add's raise of a counter completing another's step. An
// exhaustive check of every interleaving (model_test.go; with
// FLOWMON_LONG=1 up to 4 rows, counters up to 3 apart, counts up to 3)
// finds no such step with two overlapping Adds from any counters or with
// three from equal counters, and finds one with three from counters
// (2, 1). The next Add of the key then sees before >= T.
//
// Reset stores zero in every counter, one after another, with atomic
// stores; Adds that run during a Reset may land in either window, or partly
// in both: a counter raised during the Reset can keep a value from before
// it (estimates after the Reset can only be higher than the counts added
// since, never lower), and such an Add may report a crossing of the old
// window again. For clean windows, let the workers add into one sketch
// while an idle one is Reset, and swap them. Reset costs one atomic store
// per counter.
package cms
