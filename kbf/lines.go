package kbf

// The blocked layout's query, a line at a time. A key's cells in a line
// are a set, and every test Query makes of them is a test of each cell
// against the candidate code x, so the cells can be tested together: with
// AVX-512 (lines_amd64.s) the key's k <= 16 cells of all its lines are
// gathered into one vector register (a permute of two lines at a time,
// with lane indices built from the masks while the lines load), and the
// empty, singleton and counter-2 tests of all of them are a few
// instructions and one gather, where queryAt and decodeSidon loop over the
// k cells one by one. The cells with counter 3, about one per key at the
// p-capacity, get isPair's check, in the assembly too: the first two
// always, so that no branch depends on how many there are.
//
// The answers are queryAt's. The singleton path's answer does not depend
// on which singleton gives the candidate: two singletons holding different
// codes make the key Absent whichever is tried first. A key without a
// singleton (2^-k of stored keys) goes to decode with its cells in
// locate's order, as in queryAt. (Only a singleton that is no code, which
// no operation writes, can answer differently: Unknown when queryAt meets
// it first, Absent when the line form meets a good singleton first.)
//
// One register for all the lines, the permute's lanes precomputed from
// the hash, and the pair checks in the assembly: a register a line with
// the pair checks in Go (which reads the cells back from memory) makes a
// batched query slower, and so does merging the lines with compress and
// expand on the loaded cells (docs/results/kbf-layouts.md, "The line
// form's merge").

// lineSubsets[c][p] is the set of the first c cells of linePerms[p], a bit
// per cell: the cells a key takes in a line, as a mask.
var lineSubsets = func() (t [lineCellsMax + 1][permCount]uint16) {
	for p, perm := range linePerms {
		var m uint16
		for c := 1; c <= lineCellsMax; c++ {
			m |= 1 << (perm & 15)
			perm >>= 4
			t[c][p] = m
		}
	}
	return t
}()

const lineCellsMax = 16

// lineQuery is one key's query in the line form: its lines, its cells in
// each, and lineCheck's findings. lineCheck reads it at fixed offsets
// (TestLineQueryOffsets).
type lineQuery struct {
	line   [4]int    // the index of the first cell of each of the key's lines
	mask   [4]uint32 // the key's cells in each line
	x      uint32    // the candidate code: the first singleton's
	status uint32    // lineAbsent, ...
}

const (
	lineAbsent    = 0 // an empty cell, or a cell that cannot hold x
	lineFound     = 1 // x passes every test
	lineNoSingle  = 2 // no cell with counter 1: decode
	lineMalformed = 3 // the singleton is not a code (only misuse makes one)
)

// lineParams is what lineCheck needs of the filter and its codes.
type lineParams struct {
	high    *uint32 // sidonEncoder.high
	ctrMask uint32
	sh      uint32 // counter bits
	loMask  uint32 // low half of a code
	values  uint32
	q       uint32    // bits of a half
	g       uint32    // lines a key takes: f.groups
	all     uint32    // the key's lanes: (1 << k) - 1
	spread  [4]uint32 // line g's lanes: firsts[g] to firsts[g+1]
	// isPair's tables (gf)
	logP            *uint32
	logT, root, exp *uint16
	cells           *uint32 // f.c32: lineQuery's lines are indices into it
	pair            uint32  // the XOR of two codes: a pair check that passes
}

// lineReady reports whether f answers queries by lines: the blocked layout
// with 16 cells of 32 bits to a line, at most 16 cells a key (one
// register; k = 16 is p = 2^-16, so p = 1e-5 and below go cell by cell),
// Sidon codes, counters of 3 bits or more (so counters 1, 2 and 3 are
// each tested, as setRules has it), on a CPU with the instructions
// (hasLineCheck). The high half t of a cell's code bits must index logT
// (2^(q+1) entries), as it does whenever the codes fill the cell, which
// newSidon makes them do up to q = 14.
func (f *Filter) lineReady() bool {
	return hasLineCheck && f.perLine == 16 && f.k <= 16 && f.sid != nil && f.sid.values >= 2 && f.ctrMax >= 4 &&
		32-int(f.ctrBits) <= 2*f.sid.f.q+1
}

func (f *Filter) setLineParams() {
	f.byLines = f.lineReady()
	if !f.byLines {
		return
	}
	s := f.sid
	f.lp = lineParams{high: &s.high[0], ctrMask: f.ctrMask, sh: uint32(f.ctrBits),
		loMask: s.mask, values: s.values, q: uint32(s.f.q), g: uint32(f.groups), all: 1<<f.k - 1,
		logP: &s.f.logP[0], logT: &s.f.logT[0], root: &s.f.root[0], exp: &s.f.exp[0], cells: &f.c32[0],
		pair: s.code(0) ^ s.code(1)}
	for g := 0; g < f.groups; g++ {
		f.subsets[g] = &lineSubsets[f.firsts[g+1]-f.firsts[g]]
		f.lp.spread[g] = (1<<(f.firsts[g+1]-f.firsts[g]) - 1) << f.firsts[g]
	}
}

// locateLines is locate for the line form: the same lines and cells.
func (f *Filter) locateLines(key uint64, lq *lineQuery) {
	line, step, h3 := f.blockHash(f.keyHashes(key))
	for g := 0; g < f.groups; g++ {
		lq.line[g] = int(line) * 16
		lq.mask[g] = uint32(f.subsets[g][h3>>(permBits*g)&permMask])
		line = f.nextLine(line, step)
	}
}

// queryLines answers the query of key, located in lq, counting it in
// Stats: lineCheck, else queryAt's decode.
func (f *Filter) queryLines(key uint64, lq *lineQuery) (uint32, Result) {
	lineCheck(lq, &f.lp)
	switch lq.status {
	case lineAbsent:
		return f.answer(0, Absent)
	case lineFound:
		return f.answer(lq.x&f.sid.mask-1, Found)
	}
	var idx [MaxK]int
	f.locate(key, &idx)
	return f.queryAt(&idx)
}
