// Package bloom implements Bloom filters over 64-bit hashes: the standard
// filter (Bloom 1970) and the cache-blocked filter of Putze, Sanders and
// Singler ("Cache-, hash- and space-efficient Bloom filters", WEA 2007).
//
// # Keys and hashing
//
// A key is a 64-bit hash the caller already has (flowmon computes one
// XXH3-64 hash per packet and reuses it everywhere). AddBytes and TestBytes
// hash arbitrary bytes with XXH3-64 and the project seed (Seed, the same as
// capture.HashSeed). The k bit positions come from enhanced double hashing
// (Dillinger and Manolios 2004) on two full 64-bit values, never on 32-bit
// halves of one hash. Both are remixed from h, so a caller's hash whose top
// bits are slightly uneven (XXH3's are, measurably, over structured packet
// fingerprints) still spreads evenly:
//
//	h1 = mix(h), h2 = mix(h ^ c) | 1   (mix: the SplitMix64 finalizer)
//	x0 = h1; x(i+1) = x(i) + h2(i); h2(i+1) = h2(i) + i
//	position(i) = floor(x(i) * m / 2^64)   (Lemire's multiply-shift range reduction)
//
// The blocked filter picks one 512-bit block (a 64-byte cache line) with
// floor(h1 * blocks / 2^64), then k positions inside it from the top 9 bits
// of a 64-bit LCG seeded with mix(h ^ c), so a Test touches one cache line.
//
// A Probe holds a key's block and its k positions gathered into a 512-bit
// mask. Inserting is then eight ORs and testing eight masked compares with
// one branch, and filters of one shape share the probe: an FBF computes it
// once for the filters it checks and the two it inserts into. The k LCG
// outputs are computed as y(i+4) = a·y(i) + c (a = mul^4, c the matching
// increment, mod 2^64) on four interleaved chains: the same positions as
// the one-step chain, whose k multiplications each wait for the last, in a
// chain a quarter as long. Test alone keeps the one-step loop: for an
// absent key it stops at the first clear bit, usually one or two in.
//
// # Sizing and the false-positive rate
//
// For n elements and a target false-positive rate p, the standard filter
// uses m = ceil(-n ln p / (ln 2)^2) bits and k = round(m/n ln 2) hashes.
// Its false-positive rate after n distinct insertions is (Broder and
// Mitzenmacher, "Network applications of Bloom filters", eq. 1 of the FBF
// paper)
//
//	f(n) = (1 - (1 - 1/m)^(kn))^k ≈ (1 - e^(-kn/m))^k.
//
// A blocked filter with blocks of B = 512 bits receives a Poisson(λ = nB/m)
// number of elements per block, so (Putze et al., section 3)
//
//	f_blocked(n) = Σ_i Pois(i; λ) · (1 - (1 - 1/B)^(ik))^k,
//
// which is larger than f(n) for the same m; NewWithOptions grows m (and
// retunes k) until f_blocked(n) meets the target.
//
// # Binary format
//
// MarshalBinary writes (all integers little endian):
//
//	offset  size  field
//	0       4     magic "FMBL"
//	4       1     version (1)
//	5       1     layout: 0 standard, 1 blocked
//	6       1     k, number of hash functions (1..MaxHashes)
//	7       1     reserved, 0
//	8       8     m, number of bits (1..MaxBits; a multiple of 512 when blocked)
//	16      8     count, additions that set at least one bit
//	24      8·w   the bit array as w = ceil(m/64) 64-bit words
//	24+8·w  4     CRC-32C (Castagnoli) of every preceding byte
//
// UnmarshalBinary checks the length against m before allocating and leaves
// the receiver unchanged on any error.
//
// # Concurrency
//
// A Filter is not safe for concurrent use: one goroutine owns it (flowmon's
// workers each own their filters). Concurrent Test calls with no writer are
// safe.
package bloom
