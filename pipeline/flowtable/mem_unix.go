//go:build unix

package flowtable

import "syscall"

// mapAnon gets size bytes of zeroed memory outside the Go heap: the flow
// table's slots, allocated once at their largest, so that the collector
// neither scans them nor counts them when it paces itself (hundreds of
// megabytes of table would let as much garbage pile up between cycles).
// Pages are touched, and take memory, only as flows use them.
func mapAnon(size int) ([]byte, error) {
	return syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
}

func unmapAnon(b []byte) error { return syscall.Munmap(b) }
