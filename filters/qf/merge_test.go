package qf

import (
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
)

// fill inserts n fingerprints of f's length, a share of them in the last
// quotients so that clusters wrap, and returns the reference.
func fill(t testing.TB, f *Filter, n int, seed uint64) ref {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	m := ref{}
	p := f.q + f.r
	for range n {
		fp := rng.Uint64() >> (64 - p)
		if rng.IntN(8) == 0 {
			fp |= (f.size - 1) << f.r
		}
		if rng.IntN(10) == 0 && len(m) > 0 {
			for k := range m { // a copy of a stored one
				fp = k
				break
			}
		}
		if err := f.InsertFingerprint(fp); err != nil {
			t.Fatal(err)
		}
		m[fp]++
	}
	return m
}

func TestMergeAgainstReference(t *testing.T) {
	for _, tc := range []struct {
		qa, ra, qb, rb uint
		na, nb         int
	}{
		{4, 6, 4, 6, 10, 11},
		{4, 6, 5, 5, 12, 20},
		{8, 10, 6, 12, 190, 40},
		{10, 20, 10, 20, 760, 760},
		{3, 3, 3, 3, 7, 7},
		{12, 40, 9, 43, 3000, 380},
	} {
		a, b := mustShape(t, tc.qa, tc.ra), mustShape(t, tc.qb, tc.rb)
		ma, mb := fill(t, a, tc.na, 1), fill(t, b, tc.nb, 2)
		g, err := Merge(a, b)
		if err != nil {
			t.Fatal(err)
		}
		m := ref{}
		for k, c := range ma {
			m[k] += c
		}
		for k, c := range mb {
			m[k] += c
		}
		agree(t, g, m, "merged")
		if g.Load() > DefaultMaxLoad || g.FingerprintBits() != a.FingerprintBits() {
			t.Errorf("merged load %.2f, %d-bit fingerprints", g.Load(), g.FingerprintBits())
		}
		// The inputs are untouched.
		agree(t, a, ma, "a after merge")
		agree(t, b, mb, "b after merge")
	}
}

func TestMergeRefusesOtherLengths(t *testing.T) {
	a, b := mustShape(t, 4, 6), mustShape(t, 4, 7)
	if _, err := Merge(a, b); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("err %v", err)
	}
}

// TestResize doubles and halves filters: the same fingerprints, laid out
// in the new shape, before and after.
func TestResize(t *testing.T) {
	for _, tc := range []struct {
		q, r uint
		n    int
	}{{3, 5, 5}, {4, 6, 15}, {8, 8, 250}, {10, 30, 1000}, {6, 2, 60}} {
		f := mustShape(t, tc.q, tc.r)
		m := fill(t, f, tc.n, uint64(tc.q))
		d, err := f.Double()
		if err != nil {
			t.Fatal(err)
		}
		if d.QuotientBits() != tc.q+1 || d.RemainderBits() != tc.r-1 {
			t.Fatalf("doubled to q=%d r=%d", d.QuotientBits(), d.RemainderBits())
		}
		agree(t, d, m, "doubled")
		h, err := d.Resize(tc.q)
		if err != nil {
			t.Fatal(err)
		}
		agree(t, h, m, "halved back")
		if !slices.Equal(h.words, f.words) {
			t.Fatal("doubling then halving does not give the same slots")
		}
	}
	f := mustShape(t, 3, 1)
	fill(t, f, 7, 1)
	if _, err := f.Double(); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("doubling with r=1: %v", err)
	}
	if _, err := f.Resize(2); !errors.Is(err, ErrFull) {
		t.Errorf("halving 7 into 4 slots: %v", err)
	}
}

// TestWriterReader writes ascending fingerprints as a linear table, with
// and without overflow past 2^q, and reads them back.
func TestWriterReader(t *testing.T) {
	for _, tc := range []struct {
		q, r uint
		n    int
		top  bool // crowd the last quotients: overflow
	}{{4, 4, 10, false}, {4, 4, 30, true}, {10, 13, 900, false}, {10, 13, 1500, true}, {3, 61, 12, true}, {8, 1, 200, false}} {
		rng := rand.New(rand.NewPCG(uint64(tc.n), 3))
		var fps []uint64
		p := tc.q + tc.r
		for range tc.n {
			fp := rng.Uint64() >> (64 - p)
			if tc.top {
				fp |= (1<<tc.q - 2) << tc.r
			}
			fps = append(fps, fp)
		}
		slices.Sort(fps)
		var words []uint64
		w, err := NewWriter(tc.q, tc.r, func(ws []uint64) error { words = append(words, ws...); return nil })
		if err != nil {
			t.Fatal(err)
		}
		for _, fp := range fps {
			if err := w.Add(fp); err != nil {
				t.Fatal(err)
			}
		}
		slots, err := w.Close()
		if err != nil {
			t.Fatal(err)
		}
		if uint64(len(words)) != LinearWords(slots, tc.r) {
			t.Fatalf("%d words for %d slots", len(words), slots)
		}
		if over := slots - 1<<tc.q; over != uint64(len(w.Overflow())) || (tc.top && over == 0) {
			t.Fatalf("overflow %d slots, %d recorded", over, len(w.Overflow()))
		}
		for _, chunk := range []int{1, 3, 512} {
			rest := words
			d, err := NewReader(tc.q, tc.r, slots, func() ([]uint64, error) {
				if len(rest) == 0 {
					return nil, io.EOF
				}
				c := rest[:min(chunk, len(rest))]
				rest = rest[len(c):]
				return c, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			var got []uint64
			for fp, ok := d.Next(); ok; fp, ok = d.Next() {
				got = append(got, fp)
			}
			if d.Err() != nil || !slices.Equal(got, fps) {
				t.Fatalf("q=%d n=%d chunk %d: read back %d of %d, err %v", tc.q, tc.n, chunk, len(got), len(fps), d.Err())
			}
		}
		if err := w.Add(0); err == nil && len(fps) > 0 && fps[len(fps)-1] > 0 {
			t.Fatal("writer took a smaller fingerprint")
		}
	}
}

func TestWriterRefusesDisorder(t *testing.T) {
	w, _ := NewWriter(4, 4, func([]uint64) error { return nil })
	if err := w.Add(200); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(199); !errors.Is(err, ErrOrder) {
		t.Fatalf("descending: %v", err)
	}
	if err := w.Add(1 << 8); !errors.Is(err, ErrOrder) {
		t.Fatalf("too long: %v", err)
	}
}

// TestReaderRejectsDamage flips bits in a linear table: the reader never
// panics, and either reads fingerprints in order or stops with ErrCorrupt.
func TestReaderRejectsDamage(t *testing.T) {
	var words []uint64
	w, _ := NewWriter(6, 5, func(ws []uint64) error { words = append(words, ws...); return nil })
	rng := rand.New(rand.NewPCG(5, 5))
	var fps []uint64
	for range 50 {
		fps = append(fps, rng.Uint64N(1<<11))
	}
	slices.Sort(fps)
	for _, fp := range fps {
		w.Add(fp)
	}
	slots, _ := w.Close()
	caught := 0
	for bit := range len(words) * 64 {
		bad := slices.Clone(words)
		bad[bit/64] ^= 1 << (bit % 64)
		given := false
		d, _ := NewReader(6, 5, slots, func() ([]uint64, error) {
			if given {
				return nil, io.EOF
			}
			given = true
			return bad, nil
		})
		var last uint64
		n := 0
		for fp, ok := d.Next(); ok; fp, ok = d.Next() {
			if n > 0 && fp < last {
				t.Fatalf("bit %d: out of order", bit)
			}
			last = fp
			n++
		}
		if d.Err() != nil {
			if !errors.Is(d.Err(), ErrCorrupt) {
				t.Fatalf("bit %d: %v", bit, d.Err())
			}
			caught++
		}
	}
	t.Logf("%d of %d single-bit flips stopped the reader (the others change a remainder or pad bits)", caught, len(words)*64)
}

// sliceSlots is a linear table in memory, for LinearRun.
type sliceSlots struct {
	words []uint64
	w     uint
	slots uint64
	reads int
}

func (s *sliceSlots) Slot(i uint64) (uint64, error) {
	s.reads++
	if i >= s.slots {
		return 0, nil
	}
	bit := i * uint64(s.w)
	k, off := bit/64, bit%64
	v := s.words[k] >> off
	if off+uint64(s.w) > 64 {
		v |= s.words[k+1] << (64 - off)
	}
	return v & (1<<s.w - 1), nil
}

// TestLinearRun looks every fingerprint of a linear table up, and absent
// ones, against the reference, overflow included.
func TestLinearRun(t *testing.T) {
	for _, tc := range []struct {
		q, r uint
		n    int
	}{{4, 4, 14}, {8, 6, 190}, {8, 6, 250}, {10, 2, 1000}} {
		rng := rand.New(rand.NewPCG(uint64(tc.n), 11))
		m := ref{}
		p := tc.q + tc.r
		for range tc.n {
			fp := rng.Uint64() >> (64 - p)
			if rng.IntN(4) == 0 {
				fp |= (1<<tc.q - 1) << tc.r
			}
			m[fp]++
		}
		fps := m.sorted()
		var words []uint64
		w, _ := NewWriter(tc.q, tc.r, func(ws []uint64) error { words = append(words, ws...); return nil })
		for _, fp := range fps {
			w.Add(fp)
		}
		slots, _ := w.Close()
		tab := &sliceSlots{words: words, w: tc.r + metaBits, slots: slots}
		for fp := uint64(0); fp < 1<<p; fp++ {
			var c int
			err := LinearRun(tab, fp>>tc.r, func(rem uint64) bool {
				if rem == fp&(1<<tc.r-1) {
					c++
				}
				return rem <= fp&(1<<tc.r-1)
			})
			if err != nil || c != m[fp] {
				t.Fatalf("q=%d n=%d: %#x counted %d, want %d (%v)", tc.q, tc.n, fp, c, m[fp], err)
			}
		}
	}
}
