package packed

import (
	"math/rand/v2"
	"testing"
)

func TestGetSetAgainstSlice(t *testing.T) {
	for w := uint(1); w <= 32; w++ {
		const n = 300
		a := New(n, w)
		ref := make([]uint32, n)
		r := rand.New(rand.NewPCG(1, uint64(w)))
		for k := 0; k < 5000; k++ {
			i := r.IntN(n)
			v := r.Uint32() & uint32(uint64(1)<<w-1)
			a.Set(i, v)
			ref[i] = v
			j := r.IntN(n)
			if got := a.Get(j); got != ref[j] {
				t.Fatalf("w=%d: field %d = %d, want %d", w, j, got, ref[j])
			}
		}
		a.Clear()
		for i := 0; i < n; i++ {
			if a.Get(i) != 0 {
				t.Fatalf("w=%d: field %d not cleared", w, i)
			}
		}
	}
}

func TestNoAllocs(t *testing.T) {
	a := New(1000, 13)
	if n := testing.AllocsPerRun(100, func() { a.Set(77, 5); _ = a.Get(77) }); n != 0 {
		t.Fatalf("allocs = %v", n)
	}
}
