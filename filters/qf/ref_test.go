package qf

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// ref is the exact reference a filter is checked against: a multiset of
// fingerprints.
type ref map[uint64]int

func (m ref) sorted() []uint64 {
	var out []uint64
	for fp, c := range m {
		for range c {
			out = append(out, fp)
		}
	}
	slices.Sort(out)
	return out
}

func mustShape(t testing.TB, q, r uint) *Filter {
	t.Helper()
	f, err := New(Options{QuotientBits: q, RemainderBits: r})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// agree checks f against m: the same sorted fingerprints, counts and
// length, and slots that are exactly the layout of those fingerprints.
func agree(t *testing.T, f *Filter, m ref, what string) {
	t.Helper()
	want := m.sorted()
	got := slices.Collect(f.All())
	if !slices.Equal(got, want) {
		t.Fatalf("%s: fingerprints\n got %x\nwant %x", what, got, want)
	}
	if f.Len() != uint64(len(want)) {
		t.Fatalf("%s: Len %d, want %d", what, f.Len(), len(want))
	}
	if err := f.check(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for fp, c := range m {
		if got := f.CountFingerprint(fp); got != uint64(c) {
			t.Fatalf("%s: count of %#x is %d, want %d", what, fp, got, c)
		}
		if !f.ContainsFingerprint(fp) && c > 0 {
			t.Fatalf("%s: %#x missing", what, fp)
		}
	}
}

// TestAgainstReference runs random insert, delete and lookup sequences on
// small tables (long runs, shared quotients, clusters over the end, the
// table filled to its last empty slot) and checks every answer and the
// whole layout against a map after each step.
func TestAgainstReference(t *testing.T) {
	for _, tc := range []struct {
		q, r  uint
		ops   int
		fpMax uint64 // fingerprints drawn from [0, fpMax): small for many copies
		hot   bool   // half the fingerprints in the last two quotients: wrap-around
	}{
		{2, 1, 3000, 8, false},
		{3, 2, 5000, 32, false},
		{3, 2, 5000, 32, true},
		{4, 3, 8000, 1 << 7, false},
		{4, 3, 8000, 1 << 7, true},
		{5, 4, 8000, 1 << 9, true},
		{6, 5, 8000, 1 << 11, false},
		{6, 58, 4000, 1 << 63, true},
		{8, 8, 20000, 1 << 16, true},
		{3, 61, 3000, 1 << 63, true}, // 64-bit slots
	} {
		rng := rand.New(rand.NewPCG(uint64(tc.q), uint64(tc.r)))
		f := mustShape(t, tc.q, tc.r)
		m := ref{}
		draw := func() uint64 {
			fp := rng.Uint64N(tc.fpMax)
			if tc.hot && rng.IntN(2) == 0 {
				// quotient 2^q-1 or 2^q-2
				fp = (f.size-1-rng.Uint64N(2))<<f.r | fp&f.rmask
			}
			return fp
		}
		for i := range tc.ops {
			// Insert more than delete while filling, then drain.
			insert := rng.IntN(100) < 60
			if i > tc.ops*3/4 {
				insert = rng.IntN(100) < 30
			}
			switch {
			case insert:
				fp := draw()
				err := f.InsertFingerprint(fp)
				if f.Len()+1 > f.size-1 && err == nil && len(m.sorted())+1 >= int(f.size) {
					t.Fatalf("q=%d: insert into a full table succeeded", tc.q)
				}
				if errors.Is(err, ErrFull) {
					if uint64(len(m.sorted())) != f.size-1 {
						t.Fatalf("q=%d: ErrFull at %d of %d", tc.q, len(m.sorted()), f.size)
					}
				} else if err != nil {
					t.Fatal(err)
				} else {
					m[fp]++
				}
			default:
				var fp uint64
				if len(m) > 0 && rng.IntN(4) != 0 {
					// delete a stored one
					keys := make([]uint64, 0, len(m))
					for k := range m {
						keys = append(keys, k)
					}
					slices.Sort(keys)
					fp = keys[rng.IntN(len(keys))]
				} else {
					fp = draw()
				}
				ok := f.DeleteFingerprint(fp)
				if ok != (m[fp] > 0) {
					t.Fatalf("q=%d op %d: delete %#x returned %t, reference holds %d", tc.q, i, fp, ok, m[fp])
				}
				if ok {
					m[fp]--
					if m[fp] == 0 {
						delete(m, fp)
					}
				}
			}
			probe := draw()
			if got := f.ContainsFingerprint(probe); got != (m[probe] > 0) {
				t.Fatalf("q=%d op %d: contains %#x = %t, reference holds %d", tc.q, i, probe, got, m[probe])
			}
			if tc.q <= 6 || i%97 == 0 {
				agree(t, f, m, "after op")
			}
		}
		agree(t, f, m, "end")
	}
}

// TestFullClusterWrapsAround fills a table to its last empty slot with
// fingerprints of the last quotients only, so that one cluster covers the
// whole table and wraps over its end, then deletes them in random order.
func TestFullClusterWrapsAround(t *testing.T) {
	for _, q := range []uint{1, 2, 3, 5, 7} {
		f := mustShape(t, q, 4)
		m := ref{}
		rng := rand.New(rand.NewPCG(uint64(q), 9))
		for f.Len() < f.size-1 {
			fp := (f.size-1-rng.Uint64N(min(3, f.size)))<<4 | rng.Uint64N(16)
			if err := f.InsertFingerprint(fp); err != nil {
				t.Fatal(err)
			}
			m[fp]++
			agree(t, f, m, "filling")
		}
		if f.get(0)&shifted == 0 && q > 1 {
			t.Fatalf("q=%d: slot 0 is not part of the wrapped cluster", q)
		}
		if err := f.InsertFingerprint(0); !errors.Is(err, ErrFull) {
			t.Fatalf("q=%d: insert into a full table: %v", q, err)
		}
		for _, fp := range m.sorted() {
			if !f.DeleteFingerprint(fp) {
				t.Fatalf("q=%d: delete %#x failed", q, fp)
			}
			m[fp]--
			if m[fp] == 0 {
				delete(m, fp)
			}
			agree(t, f, m, "draining")
		}
		for i, w := range f.words {
			if w != 0 {
				t.Fatalf("q=%d: word %d is %#x after deleting everything", q, i, w)
			}
		}
	}
}

// TestHashedKeys checks the key API against a map of keys: no false
// negatives, every inserted key's count at least its own insertions.
func TestHashedKeys(t *testing.T) {
	f, err := New(Options{Capacity: 3000, FPRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	keys := map[uint64]int{}
	for range 3000 {
		k := rng.Uint64N(2500)
		if err := f.Insert(k); err != nil {
			t.Fatal(err)
		}
		keys[k]++
	}
	for k, c := range keys {
		if !f.Contains(k) || f.Count(k) < uint64(c) {
			t.Fatalf("key %d: contains %t count %d, inserted %d", k, f.Contains(k), f.Count(k), c)
		}
	}
	for k, c := range keys {
		for range c {
			if !f.Delete(k) {
				t.Fatalf("delete %d failed", k)
			}
		}
	}
	if f.Len() != 0 {
		t.Fatalf("Len %d after deleting all", f.Len())
	}
}
