package history

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/flowmon/flowmon/filters/cascade"
)

func ip4(n uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
}

// TestNovelAgainstExact: on random pairs with repeats, past several
// merges and a reopen, a pair seen before is never novel, and a pair
// never seen is novel but for the filter's false positives.
func TestNovelAgainstExact(t *testing.T) {
	dir := t.TempDir()
	o := cascade.Options{RAMBytes: 64 << 10, Capacity: 1 << 24, FPRate: 1e-4}
	h, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[2]uint32]bool{}
	r := rand.New(rand.NewPCG(5, 6))
	missed := 0
	for round := range 2 {
		for i := range 100_000 {
			k := [2]uint32{r.Uint32N(20000), r.Uint32N(50)}
			if i%3 == 0 { // a repeat of a recent one
				k = [2]uint32{uint32(i % 20000), uint32(i % 50)}
			}
			got := h.Novel(ip4(k[0]), ip4(0xc6120000|k[1]))
			switch {
			case seen[k] && got:
				t.Fatalf("round %d: pair %v seen before is novel", round, k)
			case !seen[k] && !got:
				missed++
			}
			seen[k] = true
		}
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		if h, err = Open(dir, o); err != nil {
			t.Fatal(err)
		}
	}
	defer h.Close()
	st := h.Stats()
	t.Logf("%d distinct pairs, %d missed as seen; levels %d, merges %d", len(seen), missed, len(st.Filter.Levels), st.Filter.Merges)
	if missed > 10 {
		t.Errorf("%d novel pairs called seen among %d", missed, len(seen))
	}
	if st.Filter.Merges == 0 {
		t.Errorf("no merge: the test does not reach the disk levels")
	}
	if st.Errors != 0 {
		t.Errorf("%d errors: %v", st.Errors, st.LastError)
	}
}
