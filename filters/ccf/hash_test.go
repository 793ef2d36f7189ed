package ccf

import (
	"github.com/flowmon/flowmon/internal/hashmix"
	"math"
	"testing"
)

// TestHashSpread is a chi-square test of the bucket index and of the
// fingerprint over sequential keys (the worst case for a weak mix).
func TestHashSpread(t *testing.T) {
	sh := newShape(8, 8, 4)
	const m, n = 1000, 200000
	buckets := make([]float64, m)
	fps := make([]float64, sh.fpMask)
	alts := make([]float64, m)
	for k := range uint64(n) {
		fp, a := sh.derive(k, 0)
		i := hashmix.Reduce(a, m)
		buckets[i]++
		fps[fp-1]++
		alts[alt(i, fp, m)]++
	}
	for name, counts := range map[string][]float64{"bucket": buckets, "fingerprint": fps, "alternate": alts} {
		want := float64(n) / float64(len(counts))
		chi := 0.0
		for _, c := range counts {
			chi += (c - want) * (c - want) / want
		}
		df := float64(len(counts) - 1)
		// Chi-square with df degrees of freedom: mean df, sd sqrt(2 df).
		if limit := df + 5*math.Sqrt(2*df); chi > limit {
			t.Errorf("%s: chi-square %.1f > %.1f (df %.0f)", name, chi, limit, df)
		}
	}
}

// TestHashPinned pins the key -> (fingerprint, bucket) mapping: encoded
// filters exchanged between agents depend on it.
func TestHashPinned(t *testing.T) {
	sh := newShape(16, 16, 4)
	for _, tc := range []struct{ key, seed, fp, i1, i2 uint64 }{
		{0, 0, 57888, 0, 693},
		{0x666c6f776d6f6e31, 7, 27575, 610, 604},
	} {
		fp, a := sh.derive(tc.key, tc.seed)
		i1 := hashmix.Reduce(a, 1000)
		if fp != tc.fp || i1 != tc.i1 || alt(i1, fp, 1000) != tc.i2 {
			t.Errorf("key %x seed %d: fp %d buckets %d/%d, pinned %d %d/%d", tc.key, tc.seed, fp, i1, alt(i1, fp, 1000), tc.fp, tc.i1, tc.i2)
		}
	}
}
