package record

import (
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flowmon/flowmon/internal/hashmix"
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

// TestAppendUIDIsBase62 checks the spelling against math/big over random
// seeds: "C" and the 96 bits in 17 base62 digits, most significant first.
func TestAppendUIDIsBase62(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for range 100_000 {
		seed := r.Uint64()
		hi := uint64(uint32(hashmix.Mix(seed ^ hashmix.Golden)))
		n := new(big.Int).Lsh(new(big.Int).SetUint64(hi), 64)
		n.Or(n, new(big.Int).SetUint64(seed))
		var want [UIDLen]byte
		want[0] = 'C'
		sixtyTwo, m := big.NewInt(62), new(big.Int)
		for i := UIDLen - 1; i > 0; i-- {
			n.DivMod(n, sixtyTwo, m)
			want[i] = base62[m.Int64()]
		}
		if got := UIDString(seed); got != string(want[:]) {
			t.Fatalf("UIDString(%#x) = %s, want %s", seed, got, want)
		}
	}
}
