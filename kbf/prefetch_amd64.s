#include "textflag.h"

// func prefetchCells(base unsafe.Pointer, idx *int, n int, size int)
TEXT ·prefetchCells(SB), NOSPLIT|NOFRAME, $0-32
	MOVQ base+0(FP), AX
	MOVQ idx+8(FP), BX
	MOVQ n+16(FP), CX
	MOVQ size+24(FP), DX
	XORQ SI, SI
	CMPQ DX, $2
	JEQ  half
loop4:
	CMPQ SI, CX
	JGE  done
	MOVQ (BX)(SI*8), DI
	PREFETCHT0 (AX)(DI*4)
	INCQ SI
	JMP  loop4
half:
	CMPQ SI, CX
	JGE  done
	MOVQ (BX)(SI*8), DI
	PREFETCHT0 (AX)(DI*2)
	INCQ SI
	JMP  half
done:
	RET
