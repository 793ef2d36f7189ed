//go:build !linux

package memhint

import "unsafe"

// AdviseHugePages is a no-op where madvise is not wired up.
func AdviseHugePages(p unsafe.Pointer, n int) {}
