#include "textflag.h"

// func Prefetch2(a, b unsafe.Pointer)
TEXT ·Prefetch2(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	PREFETCHT0 (AX)
	PREFETCHT0 (BX)
	RET

// func PrefetchW2(a, b unsafe.Pointer)
TEXT ·PrefetchW2(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ a+0(FP), AX
	MOVQ b+8(FP), BX
	// PREFETCHW (AX) and PREFETCHW (BX): 0F 0D /1, which the assembler
	// does not name. CPUs without it (Intel before Broadwell) run it as a
	// NOP.
	BYTE $0x0F; BYTE $0x0D; BYTE $0x08
	BYTE $0x0F; BYTE $0x0D; BYTE $0x0B
	RET

// func PrefetchLines(p unsafe.Pointer, n uintptr)
TEXT ·PrefetchLines(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ p+0(FP), AX
	MOVQ n+8(FP), BX
	ADDQ AX, BX
loop:
	CMPQ AX, BX
	JAE done
	PREFETCHT0 (AX)
	ADDQ $64, AX
	JMP loop
done:
	RET
