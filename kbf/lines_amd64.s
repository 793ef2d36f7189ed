#include "textflag.h"

// Offsets in lineQuery and lineParams (TestLineQueryOffsets).
#define LQ_LINE 0
#define LQ_MASK 32
#define LQ_G 48
#define LQ_X 56
#define LQ_STATUS 60
#define LQ_THREES 64
#define LP_HIGH 0
#define LP_CTRMASK 8
#define LP_SH 12
#define LP_LOMASK 16
#define LP_VALUES 20
#define LP_Q 24

// func lineCheck(lq *lineQuery, p *lineParams)
TEXT ·lineCheck(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ lq+0(FP), DI
	MOVQ p+8(FP), SI
	MOVL LP_CTRMASK(SI), AX
	VPBROADCASTD AX, Z31 // counter mask
	MOVL $1, AX
	VPBROADCASTD AX, Z30 // counter 1
	MOVQ LQ_G(DI), CX
	XORQ R9, R9 // line
	XORL R10, R10 // a singleton found

	// Pass 1: any empty cell; the first singleton.
pass1:
	MOVQ LQ_LINE(DI)(R9*8), BX
	KMOVW LQ_MASK(DI)(R9*4), K1
	VMOVDQU32 (BX), Z0
	VPANDD Z31, Z0, Z1 // counters
	VPTESTNMD Z1, Z1, K1, K2 // the key's cells with counter 0
	KORTESTW K2, K2
	JNZ absent
	TESTL R10, R10
	JNZ next1
	VPCMPEQD Z30, Z1, K1, K3 // the key's singletons
	KMOVW K3, AX
	TESTL AX, AX
	JZ next1
	TZCNTL AX, AX
	MOVL (BX)(AX*4), R8
	MOVL $1, R10
next1:
	INCQ R9
	CMPQ R9, CX
	JLT pass1
	TESTL R10, R10
	JZ nosingle

	// x = the singleton's code, which must be a code.
	MOVL LP_SH(SI), CX
	SHRL CX, R8
	MOVL R8, LQ_X(DI)
	MOVL LP_LOMASK(SI), AX
	ANDL R8, AX // low half
	JZ malformed
	CMPL AX, LP_VALUES(SI)
	JHI malformed
	MOVQ LP_HIGH(SI), R11
	MOVL (R11)(AX*4), DX
	MOVL LP_Q(SI), CX
	MOVL R8, BX
	SHRL CX, BX // high half
	CMPL DX, BX
	JNE malformed

	// Pass 2: every cell against x.
	MOVL LP_SH(SI), CX
	VMOVD CX, X13 // counter bits, a shift count
	MOVL R8, AX
	SHLL CX, AX
	VPBROADCASTD AX, Z27 // x in a cell's place
	MOVL LP_Q(SI), AX
	VMOVD AX, X12 // q, a shift count
	MOVL LP_LOMASK(SI), AX
	VPBROADCASTD AX, Z29
	MOVL LP_VALUES(SI), AX
	VPBROADCASTD AX, Z28
	MOVL $2, AX
	VPBROADCASTD AX, Z26
	MOVL $3, AX
	VPBROADCASTD AX, Z25
	MOVQ LQ_G(DI), CX
	XORQ R9, R9
pass2:
	MOVQ LQ_LINE(DI)(R9*8), BX
	KMOVW LQ_MASK(DI)(R9*4), K1
	VMOVDQU32 (BX), Z0
	VPANDD Z31, Z0, Z1 // counters
	VPXORD Z27, Z0, Z2
	VPSRLD X13, Z2, Z2 // e = code bits XOR x
	VPTESTMD Z2, Z2, K1, K4 // the key's cells with e != 0
	VPCMPEQD Z30, Z1, K4, K5 // counter 1, not x
	KORTESTW K5, K5
	JNZ absent
	VPCMPEQD Z26, Z1, K1, K5 // counter 2
	VPANDD Z29, Z2, Z3 // e's low half
	VPCMPUD $2, Z28, Z3, K5, K6 // counter 2, low half <= values
	KANDNW K5, K6, K7 // counter 2, low half > values: e is no code
	KORTESTW K7, K7
	JNZ absent
	KMOVW K6, K7 // the gather clears its mask
	VPXORD Z4, Z4, Z4
	VPGATHERDD (R11)(Z3*4), K7, Z4 // high[low half]
	VPSRLD X12, Z2, Z5 // e's high half
	VPCMPD $4, Z5, Z4, K6, K7 // counter 2, high[low] != high half: no code
	KORTESTW K7, K7
	JNZ absent
	VPCMPEQD Z25, Z1, K4, K3 // counter 3, not x: pair checks
	KMOVW K3, AX
	MOVL AX, LQ_THREES(DI)(R9*4)
	INCQ R9
	CMPQ R9, CX
	JLT pass2
	MOVL $1, LQ_STATUS(DI)
	VZEROUPPER
	RET
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

// func prefetchLines(lq *lineQuery)
TEXT ·prefetchLines(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ lq+0(FP), DI
	MOVQ LQ_G(DI), CX
	XORQ R9, R9
ploop:
	MOVQ LQ_LINE(DI)(R9*8), BX
	PREFETCHT0 (BX)
	INCQ R9
	CMPQ R9, CX
	JLT ploop
	RET
