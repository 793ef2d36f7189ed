package kbf

import "math/bits"

// consistent reports whether a cell w can hold code x among its contents
// (x is in the cell's candidate set, Section III-E/F):
//
//	counter 1: the cell is exactly x;
//	counter 2: the cell XOR x is a code (x^x = 0 superimposed reads as x);
//	counter 3: the cell XOR x is the XOR of two distinct codes (a hit in
//	           the pairwise-XOR filter L) or 0 (the other two are equal);
//	counter >= 4, or saturated: no information, consistent with anything.
func (f *Filter) consistent(w, x uint32) bool {
	c := w & f.ctrMask
	if c == f.ctrMax {
		return true
	}
	e := w >> f.ctrBits
	switch c {
	case 0:
		return false
	case 1:
		return e == x
	case 2:
		if f.sid != nil {
			return f.sid.isCode(e ^ x)
		}
		return f.gr.isCode(e ^ x)
	case 3:
		r := e ^ x
		if r == 0 {
			return true
		}
		if f.sid != nil {
			return f.sid.isPair(r)
		}
		return f.gr.isPair(r)
	}
	return true
}

// verify reports whether x is consistent with all k cells.
func (f *Filter) verify(cells *[MaxK]uint32, x uint32) bool {
	for j := 0; j < f.k; j++ {
		if !f.consistent(cells[j], x) {
			return false
		}
	}
	return true
}

// Query returns the value stored for key (Algorithm 3 with the decoding of
// Section III-F). The answer is the intersection of the candidate sets of
// the key's k cells, computed by generating candidates from the cheapest
// cell and testing them against all cells:
//
//  1. an empty cell: Absent (the Bloom rule);
//  2. a cell with counter 1 gives its code as the candidate;
//  3. else a cell with counter 2 gives the unique pair its XOR decodes to;
//  4. else a cell with counter 3 gives every code E for which E XOR cell is
//     in the pairwise-XOR filter L (the opportunistic three-way decode);
//  5. cells with higher counters, or saturated: Unknown.
//
// Steps 2 and 3 cost O(k) cell checks (Sidon: O(1) each; Greedy: a pair
// decode scans the N codes). Step 4 scans all N codes, so a query that
// reaches it costs O(N k): rare at the p-capacity (every one of the k
// cells must hold three or more codes) but the worst case.
//
// A candidate survives when it is consistent with every cell. Exactly one
// survivor: Found. None: Absent (a stored key is always consistent with its
// own cells, so no survivor proves absence). Two or more: Unknown. The
// paper's rule 1 returns a singleton's code without looking at the other
// cells; checking them removes silent wrong answers when cells disagree.
func (f *Filter) Query(key uint64) (v uint32, r Result) {
	if f.byLines {
		var lq lineQuery
		f.locateLines(key, &lq)
		return f.queryLines(key, &lq)
	}
	var idx [MaxK]int
	f.locate(key, &idx)
	return f.queryAt(&idx)
}

// queryAt answers a query for the key whose cells are idx (Query after
// locate), counting it in Stats.
func (f *Filter) queryAt(idx *[MaxK]int) (v uint32, r Result) {
	// The first empty cell answers Absent at once: most queries of a
	// tracker are for keys a filter does not hold (new flows, older
	// generations), and stopping there saves the rest of the k misses.
	// The cells with counter 1 are noted on the way, without a branch.
	var cells [MaxK]uint32
	var ones uint32
	k, cm := f.k, f.ctrMask
	for j := 0; j < k; j++ {
		w := f.cell(idx[j])
		if w&cm == 0 {
			return f.answer(0, Absent)
		}
		cells[j] = w
		ones |= b2u(w&cm == 1) << (j & 31)
	}
	var code uint32
	if f.sid != nil && ones != 0 {
		code, r = f.decodeSidon(&cells, bits.TrailingZeros32(ones))
	} else {
		code, r = f.decode(&cells)
	}
	if r == Found {
		var ok bool
		if f.sid != nil {
			v, ok = f.sid.value(code)
		} else {
			v, ok = f.enc.value(code)
		}
		if !ok {
			r = Unknown
		}
	}
	return f.answer(v, r)
}

// answer counts a query's answer in Stats and returns it.
func (f *Filter) answer(v uint32, r Result) (uint32, Result) {
	f.st.Queries++
	switch r {
	case Found:
		f.st.Found++
	case Absent:
		f.st.AbsentAnswers++
	default:
		f.st.Unknown++
	}
	return v, r
}

// decode runs steps 2-5 of Query over non-empty cells.
func (f *Filter) decode(cells *[MaxK]uint32) (uint32, Result) {
	k := f.k
	for j := 0; j < k; j++ { // step 2: a singleton
		w := cells[j]
		if w&f.ctrMask == 1 {
			x := w >> f.ctrBits
			if !f.enc.isCode(x) {
				return 0, Unknown // malformed cell: only misuse makes one
			}
			if f.verify(cells, x) {
				return x, Found
			}
			return 0, Absent
		}
	}
	for j := 0; j < k; j++ { // step 3: a decodable pair
		w := cells[j]
		if w&f.ctrMask != 2 || w>>f.ctrBits == 0 {
			continue
		}
		a, b, ok := f.enc.pair(w >> f.ctrBits)
		if !ok {
			return 0, Unknown
		}
		va, vb := f.verify(cells, a), f.verify(cells, b)
		switch {
		case va && vb:
			return 0, Unknown
		case va:
			return a, Found
		case vb:
			return b, Found
		}
		return 0, Absent
	}
	if f.ctrMax > 3 { // step 4: the three-way decode of one cell
		if e, n, ok := f.threeWay(cells, false); ok {
			switch n {
			case 1:
				return e, Found
			case 0:
				return 0, Absent
			}
			return 0, Unknown
		}
	}
	return 0, Unknown
}

// threeWay finds the first cell holding three codes and counts the codes e
// whose XOR with it is a pair code (the opportunistic decode through the
// pairwise-XOR filter L) and that the cells admit, up to two: checked
// against every cell (verify), or by the paper's candidate sets. It returns
// the last admitted code, how many there were, and whether such a cell
// exists. (A flag, not a func value: a method value would allocate.)
func (f *Filter) threeWay(cells *[MaxK]uint32, paper bool) (found uint32, n int, ok bool) {
	for j := 0; j < f.k; j++ {
		w := cells[j]
		if w&f.ctrMask != 3 {
			continue
		}
		r := w >> f.ctrBits
		for v := 0; v < f.enc.n(); v++ {
			e := f.enc.code(uint32(v))
			if x := r ^ e; x != 0 && !f.enc.isPair(x) {
				continue
			}
			if (paper && f.inPaperSets(cells, e)) || (!paper && f.verify(cells, e)) {
				if n++; n > 1 {
					return 0, n, true
				}
				found = e
			}
		}
		return found, n, true
	}
	return 0, 0, false
}

// QueryPaper decodes as Algorithm 3 and Section III-E/F print it, for
// comparison with Query: an empty cell gives Absent; otherwise the first
// cell with counter 1 gives its code, unchecked (rule 1); otherwise the
// candidate sets of the cells with counter 2 (the unique pair) and 3 (the
// triples found through L) are intersected, cells with more codes being
// non-decodable, and a unique member is the answer (rule 2). Anything else
// is Unknown. Rule 1 can return a wrong value when cells disagree, and an
// absent key passes as soon as its cells are occupied: the false-positive
// rate is that of the Bloom filter, about p. It does not update Stats.
func (f *Filter) QueryPaper(key uint64) (v uint32, r Result) {
	var idx [MaxK]int
	f.locate(key, &idx)
	var cells [MaxK]uint32
	for j := 0; j < f.k; j++ {
		w := f.cell(idx[j])
		if w&f.ctrMask == 0 {
			return 0, Absent
		}
		cells[j] = w
	}
	code, r := f.decodePaper(&cells)
	if r != Found {
		return 0, r
	}
	if v, ok := f.enc.value(code); ok {
		return v, Found
	}
	return 0, Unknown
}

// inPaperSets reports whether x is in the candidate set of every cell with
// counter 2 or 3 (the cells the paper can decode).
func (f *Filter) inPaperSets(cells *[MaxK]uint32, x uint32) bool {
	for j := 0; j < f.k; j++ {
		if c := cells[j] & f.ctrMask; (c == 2 || c == 3) && c != f.ctrMax && !f.consistent(cells[j], x) {
			return false
		}
	}
	return true
}

func (f *Filter) decodePaper(cells *[MaxK]uint32) (uint32, Result) {
	for j := 0; j < f.k; j++ { // rule 1
		if cells[j]&f.ctrMask == 1 {
			return cells[j] >> f.ctrBits, Found
		}
	}
	for j := 0; j < f.k; j++ { // rule 2, candidates from a pair
		w := cells[j]
		if w&f.ctrMask != 2 || f.ctrMax == 2 {
			continue
		}
		a, b, ok := f.enc.pair(w >> f.ctrBits)
		if !ok {
			continue
		}
		ia, ib := f.inPaperSets(cells, a), f.inPaperSets(cells, b)
		if ia != ib {
			if ia {
				return a, Found
			}
			return b, Found
		}
		return 0, Unknown
	}
	if f.ctrMax > 3 { // rule 2, candidates from the triples of a cell
		if e, n, ok := f.threeWay(cells, true); ok && n == 1 {
			return e, Found
		}
	}
	return 0, Unknown
}
