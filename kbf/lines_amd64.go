package kbf

import "golang.org/x/sys/cpu"

// hasLineCheck: lineCheck needs AVX-512F and BMI1, and the OS must save
// the registers (x/sys/cpu checks both).
var hasLineCheck = cpu.X86.HasAVX512F && cpu.X86.HasBMI1

// lineCheck tests the key's cells in lq against its first singleton x,
// all of them in one vector register, and writes x and the status to lq:
//
//  1. a cell with counter 0 among the key's: lineAbsent;
//  2. no cell with counter 1: lineNoSingle;
//  3. the first cell with counter 1 (lines in order, cells in line order)
//     gives x. A cell with counter 1 other than x, or with counter 2 whose
//     XOR with x is not a code (one gather from high), or with counter 3
//     whose XOR with x is neither 0 nor two codes (isPair's test):
//     lineAbsent, or lineMalformed when x itself is not a code;
//  4. else lineFound.
//
//go:noescape
func lineCheck(lq *lineQuery, p *lineParams)
