// Package hashx derives the indexes the acsm filters need from the one
// 64-bit flow hash: double hashing (Kirsch and Mitzenmacher) and a
// multiply-shift range reduction (Lemire), with no division.
package hashx

import "math/bits"

// Mix is the SplitMix64 finalizer: a bijection that decorrelates a hash
// from the bits used elsewhere (sharding uses the low bits).
func Mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Reduce maps x uniformly onto [0, n).
func Reduce(x uint64, n uint64) uint64 {
	hi, _ := bits.Mul64(x, n)
	return hi
}

// Pair returns the two hashes of double hashing for h and seed; the second
// is odd so that the k probes h1 + i*h2 are distinct modulo a power of two.
func Pair(h, seed uint64) (h1, h2 uint64) {
	h1 = Mix(h ^ seed)
	h2 = Mix(h1^0x9e3779b97f4a7c15) | 1
	return h1, h2
}
