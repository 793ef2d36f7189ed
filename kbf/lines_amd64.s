#include "textflag.h"

// Offsets in lineQuery and lineParams (TestLineQueryOffsets).
#define LQ_LINE 0
#define LQ_MASK 32
#define LQ_X 48
#define LQ_STATUS 52
#define LP_HIGH 0
#define LP_CTRMASK 8
#define LP_SH 12
#define LP_LOMASK 16
#define LP_VALUES 20
#define LP_Q 24
#define LP_G 28
#define LP_ALL 32
#define LP_SPREAD 36
#define LP_LOGP 56
#define LP_LOGT 64
#define LP_ROOT 72
#define LP_EXP 80
#define LP_CELLS 88
#define LP_PAIR 96

// LANES puts into dst, at the lanes LP_SPREAD[g] (off = 4g), the indices
// (from lanes, 0 to 15 or 16 to 31) of line g's cells that the key takes.
#define LANES(off, lanes, dst) \
	KMOVW LQ_MASK+off(DI), K1; KMOVW LP_SPREAD+off(SI), K2; \
	VPCOMPRESSD.Z lanes, K1, Z10; VPEXPANDD Z10, K2, dst

// PAIRMAX puts into out max(x, y) of the pair check of the e in register
// e: above values when e is no pair of codes. It needs the shift q in CX
// (which may be out) and the tables in R8 (logP), R10 (logT), R11 (root)
// and R13 (exp), and clobbers e, DX and R9.
#define PAIRMAX(e, out) \
	MOVL e, DX; ANDL LP_LOMASK(SI), DX; SHRL CX, e; \
	MOVWLZX (R10)(e*2), out; MOVL (R8)(DX*4), R9; MOVL R9, e; SHRL $16, e; SUBL e, out; \
	MOVWLZX (R11)(out*2), out; MOVWLZX R9, e; ADDL e, out; MOVWLZX (R13)(out*2), out; \
	MOVL out, e; XORL DX, e; CMPL e, out; CMOVLHI e, out

// func lineCheck(lq *lineQuery, p *lineParams)
TEXT ·lineCheck(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ lq+0(FP), DI
	MOVQ p+8(FP), SI
	// The key's cells into Z8, line g's at the lanes LP_SPREAD[g]. The
	// lanes' indices into the lines come from the masks alone, so they are
	// built while the lines load; then one two-line permute per pair of
	// lines.
	VMOVDQU32 lanes<>+0(SB), Z20 // 0 to 15
	VMOVDQU32 lanes<>+64(SB), Z21 // 16 to 31
	VPXORD Z8, Z8, Z8
	LANES(0, Z20, Z8)
	LANES(4, Z21, Z8)
	MOVL LP_G(SI), CX
	MOVQ LP_CELLS(SI), R8
	MOVQ LQ_LINE+0(DI), AX
	MOVQ AX, BX
	CMPQ CX, $1
	JEQ one
	MOVQ LQ_LINE+8(DI), BX
one:
	VMOVDQU32 (R8)(AX*4), Z0
	VPERMI2D (R8)(BX*4), Z0, Z8
	CMPQ CX, $2
	JLE merged

	// Lines 2 and 3 (or 2 alone) into Z9, then into Z8.
	VPXORD Z9, Z9, Z9
	LANES(8, Z20, Z9)
	MOVQ LQ_LINE+16(DI), AX
	MOVQ AX, BX
	CMPQ CX, $3
	JEQ three
	LANES(12, Z21, Z9)
	MOVQ LQ_LINE+24(DI), BX
three:
	VMOVDQU32 (R8)(AX*4), Z2
	VPERMI2D (R8)(BX*4), Z2, Z9
	KMOVW LP_SPREAD+8(SI), K2
	KMOVW LP_SPREAD+12(SI), K3
	KORW K2, K3, K2
	VMOVDQU32 Z9, K2, Z8

merged:
	KMOVW LP_ALL(SI), K1 // the key's lanes
	VPBROADCASTD LP_CTRMASK(SI), Z31
	VPANDD Z31, Z8, Z1 // counters
	VPTESTNMD Z1, Z1, K1, K2 // counter 0
	KORTESTW K2, K2
	JNZ absent
	VPBROADCASTD lanes<>+4(SB), Z30 // 1
	VPCMPEQD Z30, Z1, K1, K3 // singletons
	KORTESTW K3, K3
	JZ nosingle

	// x, the first singleton's code, in every lane; e = each cell's
	// code bits XOR x.
	VPCOMPRESSD.Z Z8, K3, Z2
	VPBROADCASTD X2, Z2
	VMOVD LP_SH(SI), X13
	VPXORD Z2, Z8, Z3
	VPSRLD X13, Z3, Z3 // e
	VPSRLD X13, Z2, Z4 // x
	VPTESTMD Z3, Z3, K3, K4 // singletons other than x: failures

	// What must be a code: e at counter 2, x at the singletons.
	VPBROADCASTD lanes<>+8(SB), Z29 // 2
	VPCMPEQD Z29, Z1, K1, K5 // counter 2
	VPBLENDMD Z3, Z4, K5, Z5
	KORW K5, K3, K6
	VPBROADCASTD LP_LOMASK(SI), Z28
	VPANDD Z28, Z5, Z6 // low halves
	VPBROADCASTD LP_VALUES(SI), Z27
	VPCMPUD $2, Z27, Z6, K6, K7 // low half <= values
	KANDNW K6, K7, K2 // above values: no code
	KORW K2, K4, K4
	KMOVW K7, K2 // the gather clears its mask
	MOVQ LP_HIGH(SI), R11
	VPXORD Z9, Z9, Z9
	VPGATHERDD (R11)(Z6*4), K2, Z9 // high[low half]
	VMOVD LP_Q(SI), X12
	VPSRLD X12, Z5, Z7 // high halves
	VPCMPD $4, Z7, Z9, K7, K2 // high[low] != high half: no code
	KORTESTW K2, K4
	JNZ fail

	VMOVD X4, AX
	MOVL AX, LQ_X(DI)
	VPBROADCASTD lanes<>+12(SB), Z26 // 3
	VPCMPEQD Z26, Z1, K1, K5
	VPTESTMD Z3, Z3, K5, K5 // counter 3, not x: pair checks
	KMOVW K5, AX

	// Pair checks, isPair's: e = s, t (low and high halves) is two
	// codes when w^2 + w = t/s^3 + 1 has a root w other than 0 and 1 (log
	// w = root[logT[t] - 3 log s], 3 log s and log s from logP[s]) and x
	// = s w (exp[log w + log s]) and y = x + s are at most values. The
	// tables' sentinels (gf) make every other failure an x above values.
	// The e of the counter-3 cells go to the first lanes of Z2, the others
	// holding a pair that passes (LP_PAIR). The first two lanes are
	// checked always, without a branch on how many cells there are: a
	// key's count of counter-3 cells is 0, 1 or 2 with no pattern, and a
	// branch on it, mispredicted once the lines arrive, would throw away
	// the work begun on the next keys. More than two (about one key in
	// eight) go through the loop.
	VPBROADCASTD LP_PAIR(SI), Z2
	VPCOMPRESSD Z3, K5, Z2
	MOVL LP_Q(SI), CX
	MOVQ LP_LOGP(SI), R8
	MOVQ LP_LOGT(SI), R10
	MOVQ LP_ROOT(SI), R11
	MOVQ LP_EXP(SI), R13
	VMOVD X2, BX
	PAIRMAX(BX, R12) // max(x, y) of lane 0
	VPEXTRD $1, X2, BX
	PAIRMAX(BX, CX) // of lane 1
	CMPL CX, R12
	CMOVLHI CX, R12
	CMPL R12, LP_VALUES(SI)
	JHI absent
	BLSRL AX, AX
	BLSRL AX, AX
	JZ found
	VALIGND $2, Z2, Z2, Z2
	MOVL LP_Q(SI), CX
pairs:
	VMOVD X2, BX
	VALIGND $1, Z2, Z2, Z2
	PAIRMAX(BX, R12)
	CMPL R12, LP_VALUES(SI)
	JHI absent
	BLSRL AX, AX
	JNZ pairs
found:
	MOVL $1, LQ_STATUS(DI)
	VZEROUPPER
	RET

	// A test failed: lineAbsent, unless x itself is no code.
fail:
	VMOVD X4, R8
	MOVL R8, LQ_X(DI)
	MOVL LP_LOMASK(SI), AX
	ANDL R8, AX // low half
	JZ malformed
	CMPL AX, LP_VALUES(SI)
	JHI malformed
	MOVL (R11)(AX*4), DX
	MOVL LP_Q(SI), CX
	SHRL CX, R8 // high half
	CMPL DX, R8
	JNE malformed
absent:
	MOVL $0, LQ_STATUS(DI)
	VZEROUPPER
	RET
nosingle:
	MOVL $2, LQ_STATUS(DI)
	VZEROUPPER
	RET
malformed:
	MOVL $3, LQ_STATUS(DI)
	VZEROUPPER
	RET

// lanes<> is 0 to 31: lane indices into two lines, and the counters 1,
// 2 and 3 for broadcasts.
DATA lanes<>+0(SB)/8, $0x0000000100000000
DATA lanes<>+8(SB)/8, $0x0000000300000002
DATA lanes<>+16(SB)/8, $0x0000000500000004
DATA lanes<>+24(SB)/8, $0x0000000700000006
DATA lanes<>+32(SB)/8, $0x0000000900000008
DATA lanes<>+40(SB)/8, $0x0000000b0000000a
DATA lanes<>+48(SB)/8, $0x0000000d0000000c
DATA lanes<>+56(SB)/8, $0x0000000f0000000e
DATA lanes<>+64(SB)/8, $0x0000001100000010
DATA lanes<>+72(SB)/8, $0x0000001300000012
DATA lanes<>+80(SB)/8, $0x0000001500000014
DATA lanes<>+88(SB)/8, $0x0000001700000016
DATA lanes<>+96(SB)/8, $0x0000001900000018
DATA lanes<>+104(SB)/8, $0x0000001b0000001a
DATA lanes<>+112(SB)/8, $0x0000001d0000001c
DATA lanes<>+120(SB)/8, $0x0000001f0000001e
GLOBL lanes<>(SB), RODATA|NOPTR, $128
