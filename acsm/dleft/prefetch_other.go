//go:build !amd64

package dleft

import "unsafe"

// prefetch2 does nothing where no prefetch instruction is wired up.
func prefetch2(a, b unsafe.Pointer) {}
