package ccf

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestScanAgainstReference compares get, set, find and empty with the
// per-slot reference (ref_test.go) on random tables of several shapes:
// flowcount's (17+32 bits, most slots straddling words), the package
// default (13+16), slots of one word exactly, 5-bit slots many to a word,
// and random ones. Slots hold fingerprints drawn from a small set, with
// random counters, so that matches, duplicates and empty slots are common.
// Each shape is read both with 8-byte loads and with word pairs.
func TestScanAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	shapes := [][3]int{{17, 32, 4}, {13, 16, 4}, {32, 32, 2}, {60, 4, 16}, {4, 1, 1}, {4, 1, 16}, {7, 3, 8}, {20, 44, 3}}
	for range 40 {
		f := MinFingerprintBits + r.IntN(MaxFingerprintBits-MinFingerprintBits+1)
		c := 1 + r.IntN(min(MaxCounterBits, 64-f))
		shapes = append(shapes, [3]int{f, c, 1 + r.IntN(MaxBucketSize)})
	}
	for k := range 2 * len(shapes) {
		fcb := shapes[k/2]
		sh := newShape(fcb[0], fcb[1], fcb[2])
		if k%2 == 1 {
			// The word-pair reads of wide slots and big-endian machines.
			sh.fpBytes, sh.slotBytes = false, false
		}
		m := 1 + r.Uint64N(300)
		if k%3 == 0 {
			m = 1 + r.Uint64N(2) // i1 = alt(i1, fp) is common
		}
		tb := sh.newTable(m, 8)
		fps := make([]uint64, 1+r.IntN(6))
		for i := range fps {
			fps[i] = 1 + r.Uint64N(sh.fpMask)
		}
		// Fill with the reference set: a slot is empty, one of fps with a
		// random counter, or random bits.
		for i := range m * uint64(sh.b) {
			var v uint64
			switch r.IntN(4) {
			case 0:
			case 1, 2:
				v = sh.pack(fps[r.IntN(len(fps))], 1+r.Uint64N(sh.cMax))
			case 3:
				v = r.Uint64() & sh.slotMask
			}
			sh.setRef(&tb, i, v)
		}
		for range r.IntN(9) {
			tb.stash = append(tb.stash, entry{bucket: r.Uint64N(m), fp: fps[r.IntN(len(fps))], count: 1})
		}
		for i := range m * uint64(sh.b) {
			if got, want := sh.get(&tb, i), sh.getRef(&tb, i); got != want {
				t.Fatalf("%v: get(%d) = %#x, reference %#x", fcb, i, got, want)
			}
		}
		for range 2000 {
			fp := fps[r.IntN(len(fps))]
			if r.IntN(4) == 0 {
				fp = 1 + r.Uint64N(sh.fpMask)
			}
			i1 := r.Uint64N(m)
			if got, want := sh.find(&tb, fp, i1), sh.findRef(&tb, fp, i1, alt(i1, fp, m)); got != want {
				t.Fatalf("%v m=%d: find(%#x, %d) = %#x, reference %#x", fcb, m, fp, i1, got, want)
			}
			if got, want := sh.empty(&tb, i1), sh.emptyRef(&tb, i1); got != want {
				t.Fatalf("%v m=%d: empty(%d) = %#x, reference %#x", fcb, m, i1, got, want)
			}
		}
		// set writes the same bits as setRef, the pad word included.
		ref := tb
		ref.words = slices.Clone(tb.words)
		for range 2000 {
			i, v := r.Uint64N(m*uint64(sh.b)), r.Uint64()&sh.slotMask
			sh.set(&tb, i, v)
			sh.setRef(&ref, i, v)
		}
		if !slices.Equal(tb.words, ref.words) {
			t.Fatalf("%v: set and setRef left different words", fcb)
		}
	}
}

// TestInsertAgainstReference inserts the same keys into two filters, one
// through Insert and one through the reference insertRef, and compares
// every answer and the final encodings: the layout is unchanged.
func TestInsertAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, o := range []Options{
		{Capacity: 3000, FPRate: 1e-4, CounterBits: 32},
		{Capacity: 3000, FingerprintBits: 5, CounterBits: 3},
		{Capacity: 500, FingerprintBits: 60, CounterBits: 4, BucketSize: 7},
	} {
		a, b := mustNew(t, o), mustNew(t, o)
		for range 20000 {
			k := r.Uint64N(3500) * golden
			n := r.Uint64N(3)
			ca, ea := a.Insert(k, n)
			cb, eb := b.insertRef(k, n)
			if ca != cb || ea != eb {
				t.Fatalf("%+v: Insert(%#x, %d) = %d, %v; reference %d, %v", o, k, n, ca, ea, cb, eb)
			}
		}
		ba, _ := a.MarshalBinary()
		bb, _ := b.MarshalBinary()
		if !slices.Equal(ba, bb) {
			t.Fatalf("%+v: encodings differ", o)
		}
		if a.Stats() != b.Stats() {
			t.Fatalf("%+v: stats %+v, reference %+v", o, a.Stats(), b.Stats())
		}
	}
}

// TestPrefetch checks that Prefetch changes no answer and allocates
// nothing, on a filter with grown levels too (it prefetches level 0 only).
func TestPrefetch(t *testing.T) {
	for _, o := range []Options{
		{Capacity: 5000, FPRate: 1e-4, CounterBits: 32},
		{Capacity: 300, FingerprintBits: 8, CounterBits: 4, MaxLevels: 4},
	} {
		a, b := mustNew(t, o), mustNew(t, o)
		r := rand.New(rand.NewPCG(15, 16))
		for range 6000 {
			k := r.Uint64N(5000) * golden
			b.Prefetch(k)
			b.Prefetch(^k)
			ca, ea := a.Insert(k, 1)
			cb, eb := b.Insert(k, 1)
			if ca != cb || ea != eb {
				t.Fatalf("%+v: Insert(%#x) after Prefetch = %d, %v; without %d, %v", o, k, cb, eb, ca, ea)
			}
		}
		ba, _ := a.MarshalBinary()
		bb, _ := b.MarshalBinary()
		if !slices.Equal(ba, bb) {
			t.Fatalf("%+v: Prefetch changed the filter", o)
		}
		var i uint64
		if n := testing.AllocsPerRun(1000, func() { b.Prefetch(i * golden); i++ }); n != 0 {
			t.Errorf("%+v: Prefetch: %v allocs", o, n)
		}
	}
}
