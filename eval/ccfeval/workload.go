package ccfeval

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/zeebo/xxh3"
)

// Workload is the two hosts' multisets, keyed by the elements' 64-bit
// hashes (A and B) with the union's hashes in Union.
type Workload struct {
	A, B         map[uint64]uint64
	KeysA, KeysB []uint64 // root sets in insertion order
	Union        []uint64
	CardA, CardB uint64
}

// hashElem hashes a 32-bit element as the paper's CityHash would.
func hashElem(x uint32) uint64 {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], x)
	return xxh3.HashSeed(b[:], 0x666c6f776d6f6e31)
}

// multiplicities returns n values in [1, 255] summing to 10n.
func multiplicities(r *rand.Rand, n int) []uint64 {
	m := make([]uint64, n)
	for i := range m {
		m[i] = 10
	}
	for range 5 * n {
		i, j := r.IntN(n), r.IntN(n)
		if m[i] > 1 && m[j] < 255 {
			m[i]--
			m[j]++
		}
	}
	return m
}

// NewWorkload builds the two multisets of the package doc.
func NewWorkload(n int, onlyFrac, diffFrac float64, seed uint64) *Workload {
	r := rand.New(rand.NewPCG(seed, 0x636366))
	only := int(float64(n) * onlyFrac)
	shared := n - only
	seen := map[uint32]bool{}
	elem := func() uint64 {
		for {
			x := r.Uint32()
			if !seen[x] {
				seen[x] = true
				return hashElem(x)
			}
		}
	}
	ma := multiplicities(r, n)
	w := &Workload{A: make(map[uint64]uint64, n), B: make(map[uint64]uint64, n)}
	ndiff := int(float64(shared) * diffFrac)
	for i := range shared {
		k := elem()
		w.A[k] = ma[i]
		b := ma[i]
		if i < ndiff {
			for b == ma[i] {
				b = uint64(min(255, max(1, int(ma[i])+r.IntN(11)-5)))
			}
		}
		w.B[k] = b
		w.KeysA, w.KeysB = append(w.KeysA, k), append(w.KeysB, k)
		w.Union = append(w.Union, k)
	}
	for i := shared; i < n; i++ {
		k := elem()
		w.A[k] = ma[i]
		w.KeysA = append(w.KeysA, k)
		w.Union = append(w.Union, k)
	}
	for range only {
		k := elem()
		w.B[k] = ma[r.IntN(n)]
		w.KeysB = append(w.KeysB, k)
		w.Union = append(w.Union, k)
	}
	for _, m := range w.A {
		w.CardA += m
	}
	for _, m := range w.B {
		w.CardB += m
	}
	return w
}
