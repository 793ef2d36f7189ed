package flowtable

import (
	"runtime"
	"unsafe"

	"github.com/flowmon/flowmon/internal/memhint"
)

// offHeap is the memory of one flow table's arrays, mapped outside the Go
// heap where the platform allows (mem_unix.go). It is unmapped by
// free, or when its table is collected without having been finished.
type offHeap struct{ bufs [][]byte }

// offHeapSlice returns n zero Ts in m's memory, backed by huge pages if
// huge and the kernel has them. T must hold no pointers: the collector
// does not see memory outside its heap.
func offHeapSlice[T any](m *offHeap, n int, huge bool) []T {
	var zero T
	size := int(unsafe.Sizeof(zero)) * n
	if n == 0 || size == 0 {
		return nil
	}
	b, err := mapAnon(size)
	if err != nil {
		return make([]T, n)
	}
	m.bufs = append(m.bufs, b)
	// Probes land anywhere in the metas and a flood's flows anywhere in the
	// slots: with 4 KiB pages each is a TLB miss and, in a virtual
	// machine, a two-level page walk costing more than the cache miss.
	if huge {
		memhint.AdviseHugePages(unsafe.Pointer(unsafe.SliceData(b)), len(b))
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

func (m *offHeap) free() {
	for _, b := range m.bufs {
		_ = unmapAnon(b) // only fails for a range that is not mapped
	}
	m.bufs = nil
}

// freeWith frees m when owner is collected.
func (m *offHeap) freeWith(owner *Table) {
	runtime.AddCleanup(owner, func(m *offHeap) { m.free() }, m)
}
