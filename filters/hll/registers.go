package hll

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/flowmon/flowmon/internal/hashmix"
)

// itemSeed is XORed into an item's hash before mixing. It is fixed, so
// every HLL and every Spread cell gives an item the same register and
// rank: Merge needs that, and so does the Spread's bound (a cell's
// registers are at least the key's own). Nonzero, so that item hash 0
// does not mix to 0 (rank 65-p).
const itemSeed = 0x686c6c6974656d31 // "hllitem1"

// register returns the register index (the top p bits of the mixed hash)
// and the rank (1 + the leading zeros of the other 64-p bits, at most
// 65-p) of an item.
func register(itemHash uint64, p uint) (idx uint64, rank uint8) {
	x := hashmix.Mix(itemHash ^ itemSeed)
	return x >> (64 - p), uint8(bits.LeadingZeros64(x<<p|1<<(p-1))) + 1
}

// setMax raises byte sh/8 of *w to rank with a CAS loop and reports
// whether it changed.
func setMax(w *atomic.Uint64, sh uint, rank uint8) bool {
	return raise(w, w.Load(), sh, rank)
}

// raise is setMax from old, a value of *w already loaded.
func raise(w *atomic.Uint64, old uint64, sh uint, rank uint8) bool {
	for {
		if uint8(old>>sh) >= rank {
			return false
		}
		if w.CompareAndSwap(old, old&^(0xff<<sh)|uint64(rank)<<sh) {
			return true
		}
		old = w.Load()
	}
}

// maxBytes is the bytewise maximum of a and b.
func maxBytes(a, b uint64) uint64 {
	var r uint64
	for sh := uint(0); sh < 64; sh += 8 {
		r |= uint64(max(uint8(a>>sh), uint8(b>>sh))) << sh
	}
	return r
}

// mergeWords raises every register of dst to at least src's.
func mergeWords(dst, src []atomic.Uint64) {
	for i := range src {
		s := src[i].Load()
		for {
			d := dst[i].Load()
			m := maxBytes(d, s)
			if m == d || dst[i].CompareAndSwap(d, m) {
				break
			}
		}
	}
}

func clearWords(words []atomic.Uint64) {
	for i := range words {
		words[i].Store(0)
	}
}

// zeroBytes counts the zero bytes of w: a byte's high bit survives in
// ^((w&0x7f..)+0x7f.. | w | 0x7f..) only when the byte is 0 (no carries
// cross bytes).
func zeroBytes(w uint64) int {
	const lo7 = 0x7f7f7f7f7f7f7f7f
	return bits.OnesCount64(^((w&lo7 + lo7) | w | lo7))
}

// shape holds what an estimate of 2^p registers needs: constants and
// tables shared by every sketch of precision p.
type shape struct {
	p       uint
	m       float64 // 2^p
	alphaMM float64 // α∞·m² = m²/(2 ln 2)
	unit    float64 // 2^-q, q = 64-p: the fixed-point sum's unit
	*tables
}

type tables struct {
	// term[M] is register value M's part of the fixed-point sum:
	// 2^(q-M) for 1 <= M <= q, 0 for 0 and q+1 (Ertl's C_0 and C_(q+1),
	// which the sum leaves out).
	term [256]uint64
	// mSigma[V] is m·σ(V/m) for V = 0..m-1 zero registers, for p up to
	// MaxCellPrecision (computed on the fly above).
	mSigma []float64
}

var shapeTables [MaxPrecision + 1]struct {
	once sync.Once
	t    *tables
}

func newShape(p uint) shape {
	m := float64(uint64(1) << p)
	st := &shapeTables[p]
	st.once.Do(func() {
		t := &tables{}
		q := 64 - p
		for v := uint(1); v <= q; v++ {
			t.term[v] = 1 << (q - v)
		}
		if p <= MaxCellPrecision {
			t.mSigma = make([]float64, 1<<p)
			for v := range t.mSigma {
				t.mSigma[v] = m * sigma(float64(v)/m)
			}
		}
		st.t = t
	})
	return shape{p: p, m: m, alphaMM: m * m / (2 * math.Ln2), unit: 1 / float64(uint64(1)<<(64-p)), tables: st.t}
}

// estimate is Ertl's improved estimate of the 2^p registers in words (see
// the package doc). The sum Σ 2^(q-M[j]) over registers with 1 <= M[j] <=
// q is exact in a uint64: at most m·2^(q-1) = 2^63.
func (sh *shape) estimate(words []atomic.Uint64) float64 {
	t := &sh.term
	var sum uint64
	zeros := 0
	for i := range words {
		w := words[i].Load()
		zeros += zeroBytes(w)
		sum += t[uint8(w)] + t[uint8(w>>8)] + t[uint8(w>>16)] + t[uint8(w>>24)] +
			t[uint8(w>>32)] + t[uint8(w>>40)] + t[uint8(w>>48)] + t[uint8(w>>56)]
	}
	return sh.fromSum(sum, zeros)
}

// fromSum is α∞·m² / z with z = sum·2^-q + m·σ(V/m), V the zero registers
// (Ertl's Algorithm 6 without τ, which corrects registers at q+1, reached
// near 2^64 distinct items).
func (sh *shape) fromSum(sum uint64, zeros int) float64 {
	var ms float64
	switch {
	case float64(zeros) == sh.m:
		return 0
	case sh.mSigma != nil:
		ms = sh.mSigma[zeros]
	default:
		ms = sh.m * sigma(float64(zeros)/sh.m)
	}
	return sh.alphaMM / (float64(sum)*sh.unit + ms)
}

// sigma is Ertl's σ(x) = x + Σ_{k>=1} x^(2^k)·2^(k-1), for x in [0, 1),
// summed until it stops changing.
func sigma(x float64) float64 {
	z, y := x, 1.0
	for {
		x *= x
		prev := z
		z += x * y
		y += y
		if z == prev {
			return z
		}
	}
}

// mayExceed reports whether a cell with zeros zero registers may estimate
// above n: its estimate is at most α∞·m²/(m·σ(V/m)).
func (sh *shape) mayExceed(zeros int, n float64) bool {
	if zeros == 0 {
		return true
	}
	var ms float64
	if sh.mSigma != nil {
		ms = sh.mSigma[zeros]
	} else {
		ms = sh.m * sigma(float64(zeros)/sh.m)
	}
	return sh.alphaMM/ms > n
}
