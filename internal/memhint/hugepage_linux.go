package memhint

import (
	"syscall"
	"unsafe"
)

// AdviseHugePages asks the kernel to back a large cell array with
// transparent huge pages (madvise(MADV_HUGEPAGE); effective when THP is in
// "madvise" or "always" mode). A random cell access then costs a cache
// miss without a 4 KiB-page TLB miss and page walk, which under
// virtualisation costs more than the miss itself. Errors are ignored: the
// advice is an optimisation only.
func AdviseHugePages(p unsafe.Pointer, n int) {
	const huge = 2 << 20
	start := (uintptr(p) + huge - 1) &^ (huge - 1)
	end := (uintptr(p) + uintptr(n)) &^ (huge - 1)
	if end <= start {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Add(p, start-uintptr(p))), end-start)
	_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE)
}
