package memhint

import "unsafe"

// Prefetch2 issues a PREFETCHT0 for the lines at a and b: a hint that
// retires at once, so the misses of several flows' buckets overlap.
//
//go:noescape
func Prefetch2(a, b unsafe.Pointer)

// PrefetchW2 issues a PREFETCHW for the lines at a and b: it fetches them
// for writing, taking them from another core's cache ahead of the stores,
// so the stores do not wait in the store buffer for their lines.
//
//go:noescape
func PrefetchW2(a, b unsafe.Pointer)

// PrefetchLines issues a PREFETCHT0 for every 64-byte line from p to
// p+n: a stream read ahead of a reader whose next address depends on what
// it reads (a capture's record lengths), which the hardware's own
// prefetchers follow only within a page.
//
//go:noescape
func PrefetchLines(p unsafe.Pointer, n uintptr)
