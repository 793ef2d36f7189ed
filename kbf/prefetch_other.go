//go:build !amd64

package kbf

import "unsafe"

// prefetchCells is a no-op where no prefetch instruction is wired up:
// QueryBatch then runs as a loop of Query.
func prefetchCells(base unsafe.Pointer, idx *int, n int, size int) {}
