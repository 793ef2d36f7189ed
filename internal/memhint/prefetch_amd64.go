package memhint

import "unsafe"

// Prefetch2 issues a PREFETCHT0 for the lines at a and b: a hint that
// retires at once, so the misses of several flows' buckets overlap.
//
//go:noescape
func Prefetch2(a, b unsafe.Pointer)
