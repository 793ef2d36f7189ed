//go:build !amd64

package memhint

import "unsafe"

// Prefetch2 does nothing where no prefetch instruction is wired up.
func Prefetch2(a, b unsafe.Pointer) {}

// PrefetchW2 does nothing where no prefetch instruction is wired up.
func PrefetchW2(a, b unsafe.Pointer) {}

// PrefetchLines does nothing where no prefetch instruction is wired up.
func PrefetchLines(p unsafe.Pointer, n uintptr) {}
