package kbf

// encoder turns values into codes and answers the membership questions the
// decoder asks. Codes are nonzero, fit in bits() bits, and all codes and all
// XORs of two distinct codes are pairwise distinct (Section III-C).
type encoder interface {
	// code returns the code of value v (v < n()).
	code(v uint32) uint32
	// value returns the value whose code is c, if c is an assigned code.
	value(c uint32) (uint32, bool)
	// isCode reports whether c is an assigned code.
	isCode(c uint32) bool
	// isPair reports whether r is the XOR of two distinct assigned codes.
	isPair(r uint32) bool
	// pair splits r = a XOR b into the two distinct codes a < b.
	pair(r uint32) (a, b uint32, ok bool)
	// n is the number of codes; bits the width of a code.
	n() int
	bits() int
}

// bitset is a fixed bitmap, the exact form of the paper's conventional
// Bloom filter over the code space (one identity hash, no false positives).
type bitset []uint64

func newBitset(nbits uint64) bitset { return make(bitset, (nbits+63)/64) }

func (b bitset) has(i uint32) bool {
	w := uint64(i) >> 6
	return w < uint64(len(b)) && b[w]&(1<<(i&63)) != 0
}

func (b bitset) set(i uint32) { b[i>>6] |= 1 << (i & 63) }
