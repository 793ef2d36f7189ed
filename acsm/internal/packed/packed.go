// Package packed is an array of fixed-width unsigned fields (1 to 32 bits)
// packed into 64-bit words, so the filters of acsm/sbf and acsm/fcf cost
// exactly the bits they claim. It is not safe for concurrent use.
package packed

// Array holds n fields of width w bits.
type Array struct {
	words []uint64
	n     int
	w     uint
	mask  uint64
}

// New returns an array of n zero fields of w bits (1 <= w <= 32; other
// widths are clamped).
func New(n int, w uint) Array {
	if w < 1 {
		w = 1
	}
	if w > 32 {
		w = 32
	}
	if n < 0 {
		n = 0
	}
	return Array{words: make([]uint64, (uint64(n)*uint64(w)+63)/64+1), n: n, w: w, mask: 1<<w - 1}
}

// Len is the number of fields.
func (a *Array) Len() int { return a.n }

// Width is the field width in bits.
func (a *Array) Width() uint { return a.w }

// Bytes is the memory the fields take.
func (a *Array) Bytes() int { return len(a.words) * 8 }

// Get returns field i (i must be in [0, Len)).
func (a *Array) Get(i int) uint32 {
	bit := uint64(i) * uint64(a.w)
	word, off := bit/64, bit%64
	v := a.words[word] >> off
	if off+uint64(a.w) > 64 {
		v |= a.words[word+1] << (64 - off)
	}
	return uint32(v & a.mask)
}

// Set stores v (truncated to the width) in field i.
func (a *Array) Set(i int, v uint32) {
	bit := uint64(i) * uint64(a.w)
	word, off := bit/64, bit%64
	x := uint64(v) & a.mask
	a.words[word] = a.words[word]&^(a.mask<<off) | x<<off
	if off+uint64(a.w) > 64 {
		sh := 64 - off
		a.words[word+1] = a.words[word+1]&^(a.mask>>sh) | x>>sh
	}
}

// Clear zeroes every field.
func (a *Array) Clear() { clear(a.words) }
