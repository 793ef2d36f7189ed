package memhint

import (
	"testing"
	"unsafe"
)

// TestHintsChangeNothing: a prefetch, for reading or for writing, of a
// line or of a range, leaves
// the memory as it was, at every line of a buffer and at its last byte.
func TestHintsChangeNothing(t *testing.T) {
	b := make([]byte, 4096)
	for i := range b {
		b[i] = byte(i * 7)
	}
	for i := 0; i < len(b); i += 64 {
		p := unsafe.Pointer(&b[i])
		Prefetch2(p, unsafe.Pointer(&b[len(b)-1]))
		PrefetchW2(p, unsafe.Pointer(&b[len(b)-1]))
		PrefetchLines(p, uintptr(len(b)-i))
	}
	for i := range b {
		if b[i] != byte(i*7) {
			t.Fatalf("byte %d changed to %d", i, b[i])
		}
	}
}
