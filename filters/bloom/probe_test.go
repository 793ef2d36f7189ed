package bloom

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/flowmon/flowmon/internal/hashmix"
)

// refFilter is the blocked filter without probes: the block
// recomputed per call and a chain of k dependent LCG steps testing or
// setting one bit at a time. It is the reference the probe path must match
// bit for bit, and the baseline of the benchmarks.
type refFilter struct {
	words  []uint64
	blocks uint64
	k      uint32
	count  uint64
}

func newRef(f *Filter) *refFilter {
	return &refFilter{words: make([]uint64, len(f.words)), blocks: f.blocks, k: f.k}
}

func (f *refFilter) Test(h uint64) bool {
	blk := f.words[hashmix.Reduce(hashmix.Mix(h), f.blocks)*blockWrds:][:blockWrds]
	y := hashmix.Mix(h ^ lcgAdd)
	for i := uint32(0); i < f.k; i++ {
		p := y >> (64 - 9)
		if blk[p>>6]&(1<<(p&63)) == 0 {
			return false
		}
		y = y*lcgMul + lcgAdd
	}
	return true
}

func (f *refFilter) TestAndAdd(h uint64) bool {
	present := true
	blk := f.words[hashmix.Reduce(hashmix.Mix(h), f.blocks)*blockWrds:][:blockWrds]
	y := hashmix.Mix(h ^ lcgAdd)
	for i := uint32(0); i < f.k; i++ {
		p := y >> (64 - 9)
		w, b := &blk[p>>6], uint64(1)<<(p&63)
		present = present && *w&b != 0
		*w |= b
		y = y*lcgMul + lcgAdd
	}
	if !present {
		f.count++
	}
	return present
}

// TestProbeMatchesPerBit fills a probe-path filter and the per-bit
// reference with the same random keys, for k from 1 to MaxHashes and
// several fill levels (so that Test answers both ways and some insertions
// are false positives): every Test and TestAndAdd answer, the counts and
// the bit arrays must be identical. Both entry points are checked: the
// Test/TestAndAdd API and probes shared with a second filter of the shape.
func TestProbeMatchesPerBit(t *testing.T) {
	for _, k := range []int{1, 2, 3, 7, 8, 13, 20, 24, 31, MaxHashes} {
		for _, blocks := range []uint64{1, 3, 64} {
			t.Run(fmt.Sprintf("k=%d/blocks=%d", k, blocks), func(t *testing.T) {
				o := Options{Bits: blocks * BlockBits, Hashes: k, Blocked: true}
				f, _ := NewWithOptions(o)
				g, _ := NewWithOptions(o) // driven through shared probes
				ref := newRef(f)
				r := rand.New(rand.NewPCG(uint64(k), blocks))
				// Enough keys to saturate the smallest filters, so that
				// both answers and false-positive insertions occur.
				n := int(blocks) * 2000 / k
				var yes, no int
				for i := range n {
					h, q := r.Uint64(), r.Uint64()
					p := f.Probe(q)
					if got, want := f.Test(q), ref.Test(q); got != want {
						t.Fatalf("key %d: Test(%#x) = %t, per-bit %t", i, q, got, want)
					}
					if got, want := g.TestProbe(&p), ref.Test(q); got != want {
						t.Fatalf("key %d: TestProbe(%#x) = %t, per-bit %t", i, q, got, want)
					}
					want := ref.TestAndAdd(h)
					if want {
						yes++
					} else {
						no++
					}
					if got := f.TestAndAdd(h); got != want {
						t.Fatalf("key %d: TestAndAdd(%#x) = %t, per-bit %t", i, h, got, want)
					}
					p = f.Probe(h)
					if got := g.TestAndAddProbe(&p); got != want {
						t.Fatalf("key %d: TestAndAddProbe(%#x) = %t, per-bit %t", i, h, got, want)
					}
				}
				if !slices.Equal(f.words, ref.words) || !slices.Equal(g.words, ref.words) {
					t.Fatal("bit arrays differ from the per-bit reference")
				}
				if f.Count() != ref.count || g.Count() != ref.count {
					t.Fatalf("counts %d and %d, per-bit %d", f.Count(), g.Count(), ref.count)
				}
				if yes == 0 || no == 0 {
					t.Fatalf("insertions found present %d, absent %d: want both", yes, no)
				}
			})
		}
	}
}

// TestProbeStandard checks that probes of a standard filter fall back to
// the per-bit code.
func TestProbeStandard(t *testing.T) {
	f, _ := NewWithOptions(Options{Bits: 4096, Hashes: 5})
	g, _ := NewWithOptions(Options{Bits: 4096, Hashes: 5})
	r := rand.New(rand.NewPCG(5, 5))
	for range 500 {
		h := r.Uint64()
		p := g.Probe(h)
		if f.Test(h) != g.TestProbe(&p) || f.TestAndAdd(h) != g.TestAndAddProbe(&p) {
			t.Fatalf("probe of %#x answers differently", h)
		}
	}
	if !f.Equal(g) {
		t.Fatal("filters differ")
	}
}

func TestProbeNoAllocs(t *testing.T) {
	f, _ := NewBlocked(1000, 1e-6)
	h := uint64(1)
	if n := testing.AllocsPerRun(1000, func() {
		h = h*lcgMul + lcgAdd
		p := f.Probe(h)
		f.TestProbe(&p)
		f.TestAndAddProbe(&p)
	}); n != 0 {
		t.Errorf("%v allocs per op", n)
	}
}

// BenchmarkBlocked compares the probe path (SetProbe and TestProbe;
// TestAndAdd) with the per-bit reference in one run, on the dedup stage's shape (25k elements at
// 1e-6, k = 20; a cache-resident filter) holding 25k keys, for fresh keys.
func BenchmarkBlocked(b *testing.B) {
	const n = 25_000
	type ops struct {
		test, testAndAdd func(uint64) bool
	}
	for _, impl := range []string{"per-bit", "probe"} {
		for _, op := range []string{"test", "testandadd"} {
			b.Run(impl+"/"+op, func(b *testing.B) {
				f, _ := NewBlocked(n, 1e-6)
				ref := newRef(f)
				var p Probe
				o := ops{func(h uint64) bool { f.SetProbe(&p, h); return f.TestProbe(&p) }, f.TestAndAdd}
				if impl == "per-bit" {
					o = ops{ref.Test, ref.TestAndAdd}
				}
				r := rand.New(rand.NewPCG(1, 2))
				for range n {
					o.testAndAdd(r.Uint64())
				}
				keys := make([]uint64, 1<<16)
				for i := range keys {
					keys[i] = r.Uint64()
				}
				fn := o.test
				if op == "testandadd" {
					fn = o.testAndAdd
				}
				var hits int
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if fn(keys[i&(len(keys)-1)] ^ uint64(i>>16)) {
						hits++
					}
				}
				_ = hits
			})
		}
	}
}
