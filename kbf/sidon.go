package kbf

import "fmt"

// primitive[q] is a primitive polynomial of degree q over GF(2) (bit i is
// the coefficient of x^i).
var primitive = [...]uint32{
	2: 0x7, 3: 0xB, 4: 0x13, 5: 0x25, 6: 0x43, 7: 0x83, 8: 0x11D,
	9: 0x211, 10: 0x409, 11: 0x805, 12: 0x1053, 13: 0x201B, 14: 0x4443,
}

// sidonDegree is the smallest field degree q with 2^q - 1 >= values.
func sidonDegree(values int) int {
	q := 2
	for (1<<q)-1 < values {
		q++
	}
	return q
}

// gf is GF(2^q) with log and antilog tables.
type gf struct {
	q   int
	ord uint32 // 2^q - 1, the order of the multiplicative group
	// exp[i] = g^i for i < 2 ord (doubled, so exp[a+b] needs no
	// reduction), and pairNone above, to 4 ord: isPair's sentinels
	// land there.
	exp  []uint16
	log  []uint16 // log[x] for x != 0
	cube []uint16 // cube[x] = x^3
	// echelon form of the GF(2)-linear map w -> w^2 + w: rows[i] has its
	// leading bit at piv[i]; pre[i] is a w with w^2 + w = rows[i].
	rows, pre []uint16
	piv       []int8
	// Because the echelon form is fully reduced, the rows used to reduce c
	// are exactly those whose pivot bit is set in c, so the root w and the
	// remainder are GF(2)-linear in c: solW[h][b] and solR[h][b] hold them
	// for byte b of c at byte position h (the matrix applied a byte at a
	// time).
	solW, solR [2][256]uint16
	// isPair's tables (fastpath.go), laid out so that a pair check is
	// four lookups and a subtraction, with no test between them:
	// logP[s] = log s | (3 log s mod ord) << 16, and 2 ord at s = 0 (a
	// sentinel); logT[t] = log t + ord for 0 < t <= ord,
	// 3 ord for t = 0 and 4 ord above ord (2^(q+1) entries); root[l],
	// for l = logT[t] - logP[s]>>16 in [0, 4 ord], is log w for the root w of
	// w^2 + w = t/s^3 + 1 (of w^2 + w = 1 when t = 0), or 2 ord when
	// there is none, it is 0 or 1, or t is above ord.
	logP       []uint32
	logT, root []uint16
}

// pairNone is exp's entry at isPair's sentinels: above any code half.
const pairNone = 0xffff

func newGF(q int) (*gf, error) {
	if q < 2 || q >= len(primitive) {
		return nil, fmt.Errorf("%w: field degree %d outside [2, %d]", ErrInvalidOptions, q, len(primitive)-1)
	}
	size := uint32(1) << q
	n := size - 1
	g := &gf{q: q, ord: n, exp: make([]uint16, 4*n+1), log: make([]uint16, size), cube: make([]uint16, size)}
	x := uint32(1)
	for i := uint32(0); i < g.ord; i++ {
		g.exp[i] = uint16(x)
		g.exp[i+g.ord] = uint16(x)
		g.log[x] = uint16(i)
		x <<= 1
		if x&size != 0 {
			x ^= primitive[q]
		}
		if x == 1 && i+1 < g.ord {
			return nil, fmt.Errorf("kbf: polynomial %#x is not primitive", primitive[q])
		}
	}
	for x := uint32(1); x < size; x++ {
		g.cube[x] = uint16(g.mul(x, g.mul(x, x)))
	}
	// Gaussian elimination of L(w) = w^2 + w over the basis w = 2^j.
	for j := 0; j < q; j++ {
		w := uint32(1) << j
		r, p := g.mul(w, w)^w, w
		for i := range g.rows {
			if r>>uint(g.piv[i])&1 != 0 {
				r ^= uint32(g.rows[i])
				p ^= uint32(g.pre[i])
			}
		}
		if r == 0 {
			continue // w or w+1 in the kernel {0, 1}
		}
		top := int8(31 - lz32(r))
		for i := range g.rows { // keep the form fully reduced
			if uint32(g.rows[i])>>uint(top)&1 != 0 {
				g.rows[i] ^= uint16(r)
				g.pre[i] ^= uint16(p)
			}
		}
		g.rows = append(g.rows, uint16(r))
		g.pre = append(g.pre, uint16(p))
		g.piv = append(g.piv, top)
	}
	for h := 0; h < 2; h++ {
		for b := 0; b < 256; b++ {
			c := uint32(b) << (8 * h)
			if c>>q != 0 {
				continue
			}
			w, r := uint32(0), c
			for i := range g.rows {
				if c>>uint(g.piv[i])&1 != 0 {
					r ^= uint32(g.rows[i])
					w ^= uint32(g.pre[i])
				}
			}
			g.solW[h][b], g.solR[h][b] = uint16(w), uint16(r)
		}
	}
	g.pairTables()
	return g, nil
}

// pairTables fills exp's sentinels and builds logP, logT and root (see
// gf).
func (g *gf) pairTables() {
	n := g.ord
	for i := 2 * n; i <= 4*n; i++ {
		g.exp[i] = pairNone
	}
	g.logP = make([]uint32, n+1)
	g.logP[0] = 2 * n
	for s := uint32(1); s <= n; s++ {
		l := uint32(g.log[s])
		g.logP[s] = l | 3*l%n<<16
	}
	g.logT = make([]uint16, 2*(n+1))
	g.logT[0] = uint16(3 * n)
	for t := uint32(1); t < uint32(len(g.logT)); t++ {
		if t <= n {
			g.logT[t] = g.log[t] + uint16(n)
		} else {
			g.logT[t] = uint16(4 * n)
		}
	}
	logRoot := func(c uint32) uint16 {
		w, ok := g.solveQuad(c)
		if !ok || w <= 1 {
			return uint16(2 * n)
		}
		return g.log[w]
	}
	g.root = make([]uint16, 4*n+1)
	for l := uint32(0); l < 2*n; l++ {
		g.root[l] = logRoot(uint32(g.exp[l]) ^ 1) // t/s^3 + 1 = g^l + 1
	}
	for l := 2 * n; l <= 3*n; l++ {
		g.root[l] = logRoot(1) // t = 0
	}
	for l := 3*n + 1; l <= 4*n; l++ {
		g.root[l] = uint16(2 * n) // t above ord
	}
}

func lz32(x uint32) int {
	n := 0
	for x&0x80000000 == 0 {
		x <<= 1
		n++
	}
	return n
}

func (g *gf) mul(a, b uint32) uint32 {
	if a == 0 || b == 0 {
		return 0
	}
	return uint32(g.exp[uint32(g.log[a])+uint32(g.log[b])])
}

// div returns a/b for b != 0.
func (g *gf) div(a, b uint32) uint32 {
	if a == 0 {
		return 0
	}
	return uint32(g.exp[uint32(g.log[a])+g.ord-uint32(g.log[b])])
}

// solveQuad returns a root w of w^2 + w = c by reducing c against the
// precomputed echelon form; ok is false when c is not in the image (trace 1).
func (g *gf) solveQuad(c uint32) (w uint32, ok bool) {
	lo, hi := c&0xff, c>>8&0xff
	w = uint32(g.solW[0][lo] ^ g.solW[1][hi])
	return w, g.solR[0][lo] == g.solR[1][hi]
}

// sidonEncoder maps value v to x = v+1 in GF(2^q) and to the code
// x | x^3 << q (2q bits).
type sidonEncoder struct {
	f      *gf
	values uint32
	mask   uint32
	// high[x] is the high half x^3 of the code whose low half is x, for
	// the assigned x (1..values), and 2^32-1 for x = 0: with x = c&mask
	// mapped to 0 when above values, c is a code when high[x] == c>>q, one
	// lookup in a table of 4(values+1) bytes (the fast path's isCode).
	high []uint32
}

// newSidon builds codes for values in GF(2^q) with q the widest field whose
// 2q-bit codes fit in width bits (at most 14): the codes are a subset of
// the field, and the sparser they are among all 2q-bit words, the more
// surely a consistency check rejects a wrong candidate.
func newSidon(values, width int) (*sidonEncoder, error) {
	q := sidonDegree(values)
	if w := min(width/2, len(primitive)-1); w > q {
		q = w
	}
	f, err := newGF(q)
	if err != nil {
		return nil, err
	}
	e := &sidonEncoder{f: f, values: uint32(values), mask: f.ord, high: make([]uint32, values+1)}
	e.high[0] = 1<<32 - 1 // above any cell's high half: 0 is no code's low half
	for x := 1; x <= values; x++ {
		e.high[x] = uint32(f.cube[x])
	}
	return e, nil
}

func (s *sidonEncoder) n() int    { return int(s.values) }
func (s *sidonEncoder) bits() int { return 2 * s.f.q }

func (s *sidonEncoder) code(v uint32) uint32 {
	x := v + 1
	return x | uint32(s.f.cube[x])<<s.f.q
}

func (s *sidonEncoder) isCode(c uint32) bool {
	x := c & s.mask
	return x != 0 && x <= s.values && c>>s.f.q == uint32(s.f.cube[x])
}

func (s *sidonEncoder) value(c uint32) (uint32, bool) {
	if !s.isCode(c) {
		return 0, false
	}
	return c&s.mask - 1, true
}

// pair solves {x, y} from s = x+y and t = x^3+y^3: xy = t/s + s^2, and with
// x = s w, w^2 + w = xy/s^2.
func (s *sidonEncoder) pair(r uint32) (a, b uint32, ok bool) {
	f := s.f
	sum, t := r&s.mask, r>>f.q
	if sum == 0 || t > s.mask {
		return 0, 0, false
	}
	s2 := f.mul(sum, sum)
	prod := f.div(t, sum) ^ s2
	if prod == 0 {
		return 0, 0, false
	}
	w, ok := f.solveQuad(f.div(prod, s2))
	if !ok {
		return 0, 0, false
	}
	x := f.mul(sum, w)
	y := x ^ sum
	if x == 0 || y == 0 || x > s.values || y > s.values {
		return 0, 0, false
	}
	if x > y {
		x, y = y, x
	}
	return x | uint32(f.cube[x])<<f.q, y | uint32(f.cube[y])<<f.q, true
}
