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
