package kbf

import "unsafe"

// prefetchCells issues a PREFETCHT0 for each of the n cells idx[0..n) (idx
// points at the first of n ints) of the array at base, whose cells are
// size bytes (2 or 4). A prefetch is a
// hint: it retires at once and loads the line into the cache in the
// background, so the prefetches of many keys are in flight together
// without filling the reorder buffer as waiting loads would.
//
//go:noescape
func prefetchCells(base unsafe.Pointer, idx *int, n int, size int)
