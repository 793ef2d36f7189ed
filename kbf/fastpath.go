package kbf

// The singleton fast path of Query for Sidon codes. A stored key at the
// p-capacity finds a cell with counter 1 in all but about 2^-k of queries
// (each of its cells holds it alone with probability e^-ln2 = 1/2), so
// this path is nearly every query. It gives exactly the answers of
// decode's step 2 and is only faster:
//
//   - the k cells are checked without a branch on each cell's counter (a
//     mispredicted branch costs more than the check): e = cell XOR x is
//     tested for zero (counter 1) and for being a code (counter 2, one
//     lookup in the cube table) for every cell, and the test the counter
//     asks for is kept;
//   - the cells with counter 3, whose test is a pair decode, are tested
//     last, only when the cheap tests passed, by isPair, which skips
//     what pair computes for the codes themselves.

// b2u is 1 for true, 0 for false (compiled to a SETcc, not a branch).
func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// decodeSidon is decode's step 2 for the Sidon encoder, from the first
// cell with counter 1, cells[first] (the caller found it; without one it
// runs decode, steps 3-5).
func (f *Filter) decodeSidon(cells *[MaxK]uint32, first int) (code uint32, r Result) {
	s := f.sid
	k := f.k
	x := cells[first] >> f.ctrBits
	if !s.isCode(x) {
		return 0, Unknown // malformed cell: only misuse makes one
	}
	q, mask, values := uint(s.f.q)&31, s.mask, s.values
	high, rules := s.high, &f.rules
	sh, cm := f.ctrBits&31, f.ctrMask
	xs := x << sh
	var bad, np uint32
	var pairs [MaxK + 1]uint8 // the cells with counter 3, in order
	for j := 0; j < k; j++ {
		d := cells[j] ^ xs // counter bits unchanged, code bits e = cell XOR x
		e := d >> sh
		lo := e & mask
		lo &= -b2u(lo <= values) // above values: 0, whose high[0] matches no code
		// failures: bit 0 e != 0 (counter 1), bit 1 e not a code
		// (counter 2), bit 2 e != 0 (counter 3: a pair decode to
		// follow), bit 3 always (counter 0)
		fail := b2u(e != 0)*5 | b2u(high[lo] != e>>q)<<1 | 8
		m := uint32(rules[uint8(d&cm)]) & fail
		bad |= m
		pairs[np] = uint8(j) // kept when m says counter 3 and e != 0
		np += m >> 2
	}
	if bad&0xb != 0 {
		return 0, Absent
	}
	for _, j := range pairs[:np] {
		if !s.isPair(cells[j]>>sh ^ x) {
			return 0, Absent
		}
	}
	return x, Found
}

// isPair is pair's answer (sidon.go) computed on logarithms. With x = s w,
// w solves w^2 + w = xy/s^2 = t/s^3 + 1: its logarithm is root at log t -
// 3 log s (one lookup for the division, the constant and the quadratic,
// where pair computes s^2, t/s, their quotient and w one after the other),
// and x is one antilog lookup from log s + log w. It applies pair's checks
// without building the codes, and without a test before the last: s = 0,
// t = 0, t above the field, and no usable root are sentinels in the tables
// (gf) that carry through to an antilog above any code half. A query's pair
// checks pass or fail together, and on garbage (a key's check of another
// key's cells) any branch would be a coin toss.
func (s *sidonEncoder) isPair(r uint32) bool {
	g := s.f
	sum, t := r&s.mask, r>>g.q
	t = min(t, uint32(len(g.logT)-1)) // above ord: a sentinel
	lp := g.logP[sum]
	lw := uint32(g.root[uint32(g.logT[t])-lp>>16])
	x := uint32(g.exp[lw+lp&0xffff])
	return b2u(x <= s.values)&b2u(x^sum <= s.values) != 0
}

// setRules fills f.rules: for each counter value, a bit mask of the tests
// of consistent that apply (bit 0: equal, 1: XOR is a code, 2: XOR is a
// pair or 0, 3: never consistent; none: no information).
func (f *Filter) setRules() {
	for c := uint32(0); c <= f.ctrMask; c++ {
		var r uint8
		switch {
		case c == f.ctrMax:
		case c == 0:
			r = 8
		case c == 1:
			r = 1
		case c == 2:
			r = 2
		case c == 3:
			r = 4
		}
		f.rules[c] = r
	}
}
