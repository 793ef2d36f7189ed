package kbf

import "golang.org/x/sys/cpu"

// hasLineCheck: lineCheck needs AVX-512F, and the OS must save the
// registers (x/sys/cpu checks both).
var hasLineCheck = cpu.X86.HasAVX512F

// lineCheck tests the key's cells in lq against its first singleton x,
// each line in one vector register, and writes x, the status and the
// cells left for pair checks to lq:
//
//  1. a cell with counter 0 among the key's: lineAbsent;
//  2. the first cell with counter 1 (lines in order, cells in line
//     order) gives x; none: lineNoSingle; x not a code: lineMalformed;
//  3. a cell with counter 1 other than x, or with counter 2 whose XOR with
//     x is not a code (one gather from high): lineAbsent;
//  4. else lineFound, with the cells of counter 3 whose XOR with x is not
//     0 in threes.
//
//go:noescape
func lineCheck(lq *lineQuery, p *lineParams)

// prefetchLines starts loading the lq.g lines of lq.
//
//go:noescape
func prefetchLines(lq *lineQuery)
