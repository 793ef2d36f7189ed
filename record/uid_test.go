package record

import (
	"strings"
	"testing"
)

func TestAppendUID(t *testing.T) {
	for _, seed := range []uint64{0, 1, 0xdeadbeef, ^uint64(0)} {
		u := UIDString(seed)
		if len(u) != UIDLen || u[0] != 'C' || strings.Trim(u[1:], base62) != "" {
			t.Errorf("UIDString(%#x) = %q: want C and 17 base62 digits", seed, u)
		}
	}
	// Pinned: a uid must not change silently between flowmon versions.
	for seed, want := range map[uint64]string{0x0123456789abcdef: "C0PSBPFeCiK8OCz5nb", 0: "C0nYMFVbvoxreybR9E", ^uint64(0): "C1Dzpn0wBiUIqRWYmd"} {
		if got := UIDString(seed); got != want {
			t.Errorf("UIDString(%#x) = %s, pinned %s", seed, got, want)
		}
	}
	if UIDString(0x0123456789abcdef) == UIDString(0x0123456789abcdee) {
		t.Errorf("UIDString is not a function of its seed")
	}
	var buf [32]byte
	if n := testing.AllocsPerRun(100, func() { AppendUID(buf[:0], 42) }); n > 1 {
		t.Errorf("AppendUID: %v allocations", n)
	}
}
