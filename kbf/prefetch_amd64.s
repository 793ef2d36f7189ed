#include "textflag.h"

// func prefetchCells(base unsafe.Pointer, idx *int, n int, size int)
TEXT ·prefetchCells(SB), NOSPLIT|NOFRAME, $0-32
	MOVQ base+0(FP), AX
	MOVQ idx+8(FP), BX
	MOVQ n+16(FP), CX
	MOVQ size+24(FP), DX
	XORQ SI, SI
loop:
	CMPQ SI, CX
	JGE  done
	MOVQ (BX)(SI*8), DI
	IMULQ DX, DI // byte offset of cell idx[SI]
	PREFETCHT0 (AX)(DI*1)
	INCQ SI
	JMP  loop
done:
	RET
