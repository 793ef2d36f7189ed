// Package hashmix derives every index flowmon's structures need from one
// 64-bit hash: the packet's flow hash (capture.Key.Hash) or a filter's key.
// It is the one place the bits are mixed, so that kbf, the Bloom, counting
// Bloom and counting cuckoo filters, and the ACSM's backends agree on them.
//
// Its outputs are part of the formats flowmon exchanges: a counting cuckoo
// filter served by one agent is read by another, and marshalled filters
// are reloaded, so a change here changes where every key lives. Tests pin
// the outputs (TestPinned); change them only with a format version.
//
// The mixer is SplitMix64's finalizer (Steele, Lea and Flood, "Fast
// splittable pseudorandom number generators", OOPSLA 2014): a bijection of
// uint64 in which every input bit flips each output bit with probability
// close to 1/2. Indexes come from two hashes of one key (Kirsch and
// Mitzenmacher, "Less hashing, same performance", ESA 2006) reduced onto
// [0, n) by Lemire's multiply-shift, with no division.
package hashmix

import "math/bits"

// Golden is 2^64 divided by the golden ratio: XORed into a hash before
// mixing again, it gives a second hash independent of the first.
const Golden = 0x9e3779b97f4a7c15

// Mix is the SplitMix64 finalizer.
func Mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Reduce maps x uniformly onto [0, n): the high word of x*n.
func Reduce(x, n uint64) uint64 {
	hi, _ := bits.Mul64(x, n)
	return hi
}

// Split derives two independent hashes from h and a structure's seed:
// h1 = Mix(h ^ seed), h2 = Mix(h1 ^ Golden).
func Split(h, seed uint64) (h1, h2 uint64) {
	h1 = Mix(h ^ seed)
	return h1, Mix(h1 ^ Golden)
}

// Pair is Split with h2 odd: the probes h1 + i*h2 of double hashing are
// then distinct modulo any power of two.
func Pair(h, seed uint64) (h1, h2 uint64) {
	h1, h2 = Split(h, seed)
	return h1, h2 | 1
}

// Nth maps h onto [0, n) for the j-th (from 0) of several independent
// indexes of one key: Reduce(Mix(h + (j+1)·Golden), n), the (j+1)th output
// of SplitMix64 seeded with h. Count-min rows (cms, hll's grids) and a
// scaling Bloom filter's partitions (scbf) take their index in row or
// partition j from it, h being Mix(key ^ seed).
func Nth(h uint64, j int, n uint64) uint64 {
	return Reduce(Mix(h+uint64(j+1)*Golden), n)
}
