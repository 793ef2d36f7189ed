package cputime

import (
	"syscall"
	"time"
	"unsafe"
)

// Thread is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID).
func Thread() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	// CLOCK_THREAD_CPUTIME_ID is always there on Linux.
	_, _, _ = syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}
