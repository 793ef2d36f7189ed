//go:build !linux

package dleft

import "unsafe"

// adviseHugePages is a no-op where madvise is not wired up.
func adviseHugePages(p unsafe.Pointer, n int) {}
