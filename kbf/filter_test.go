package kbf

import (
	"errors"
	"fmt"
	"github.com/flowmon/flowmon/internal/hashmix"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// configs are the shapes every behavioural test runs on. Greedy uses 256
// values so its code search stays in milliseconds.
var configs = []struct {
	name string
	o    Options
}{
	{"greedy/standard/32", Options{Values: 256, Encoder: Greedy, Layout: Standard}},
	{"greedy/blocked/32", Options{Values: 256, Encoder: Greedy, Layout: Blocked}},
	{"sidon/standard/32", Options{Values: 3000, Encoder: Sidon, Layout: Standard}},
	{"sidon/blocked/32", Options{Values: 3000, Encoder: Sidon, Layout: Blocked}},
	{"sidon/standard/16", Options{Values: 40, Encoder: Sidon, Layout: Standard, CellBits: 16}},
	{"greedy/blocked/16", Options{Values: 40, Encoder: Greedy, Layout: Blocked, CellBits: 16}},
}

func newT(t testing.TB, o Options) *Filter {
	t.Helper()
	f, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func snapshot(f *Filter) []uint32 {
	out := make([]uint32, f.m)
	for i := range out {
		out[i] = f.cell(i)
	}
	return out
}

func TestValidate(t *testing.T) {
	good := Options{Capacity: 10, FPRate: 0.01, Values: 4}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Capacity: 0, FPRate: 0.01, Values: 4}, "capacity 0"},
		{Options{Capacity: 10, FPRate: 1, Values: 4}, "false-positive rate 1"},
		{Options{Capacity: 10, FPRate: 0.01, Values: 0}, "values 0"},
		{Options{Capacity: 10, FPRate: 0.01, Values: 4, CellBits: 8}, "cell bits 8"},
		{Options{Capacity: 10, FPRate: 0.01, Values: 4, CounterBits: 9}, "counter bits 9"},
		{Options{Capacity: 10, FPRate: 0.01, Values: 3000, Encoder: Sidon, CellBits: 16}, "3000 values need 24 sidon code bits"},
		{Options{Capacity: math.MaxInt, FPRate: 1e-9, Values: 4}, "exceed the limit"},
	} {
		err := c.o.Validate()
		if err == nil || !errors.Is(err, ErrInvalidOptions) || !contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
	if _, err := New(Options{Capacity: 10, FPRate: 0.01, Values: 200, CellBits: 16}); err == nil {
		t.Error("200 greedy codes fit in 13 bits?")
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub))
}

// TestAgainstReference runs random inserts, queries, updates and deletes
// against a map and checks every answer: no wrong value ever, every stored
// key found or Unknown, absent keys found at most at about the Bloom rate.
func TestAgainstReference(t *testing.T) {
	const n = 20000
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.Capacity, o.FPRate, o.Seed = n, 1e-3, 7
			f := newT(t, o)
			rng := rand.New(rand.NewPCG(1, 2))
			ref := map[uint64]uint32{}
			keys := make([]uint64, 0, n)
			for len(keys) < n {
				k, v := rng.Uint64(), uint32(rng.IntN(o.Values))
				if err := f.Insert(k, v); err != nil {
					t.Fatal(err)
				}
				ref[k] = v
				keys = append(keys, k)
			}
			for i := 0; i < n/4; i++ { // updates
				k := keys[rng.IntN(len(keys))]
				nv := uint32(rng.IntN(o.Values))
				if err := f.Update(k, ref[k], nv); err != nil {
					t.Fatalf("update: %v", err) // a stored key always fits its cells
				}
				ref[k] = nv
			}
			for _, k := range keys[:n/4] { // deletes
				if err := f.Delete(k, ref[k]); err != nil {
					t.Fatalf("delete: %v", err)
				}
				delete(ref, k)
			}
			var wrong, unknown, fp, absent int
			for k, v := range ref {
				got, r := f.Query(k)
				switch {
				case r == Unknown:
					unknown++
				case r == Absent:
					absent++
				case got != v:
					wrong++
				}
			}
			for i := 0; i < n; i++ {
				if _, r := f.Query(rng.Uint64()); r == Found {
					fp++
				}
			}
			t.Logf("m=%d k=%d: wrong %d, unknown %d, absent %d of %d stored; %d found of %d never inserted",
				f.m, f.k, wrong, unknown, absent, len(ref), fp, n)
			if wrong != 0 || absent != 0 {
				t.Errorf("%d wrong values, %d stored keys reported absent", wrong, absent)
			}
			if float64(unknown) > 0.01*float64(len(ref)) {
				t.Errorf("unknown rate %d/%d above 1%%", unknown, len(ref))
			}
			bound := 3*o.FPRate*n + 5
			if o.Layout == Blocked {
				bound *= 10 // uneven load across cache lines; see TestBlockedAccuracy
			}
			if float64(fp) > bound {
				t.Errorf("false positives %d, Bloom bound %.0f", fp, o.FPRate*n)
			}
			if st := f.Stats(); st.Keys != uint64(len(ref)) || st.Inserts != n {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestEqualCodesSuperimposed(t *testing.T) {
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.Capacity, o.FPRate = 1000, 1e-3
			f := newT(t, o)
			key := uint64(0xabc)
			f.Insert(key, 3)
			f.Insert(key, 3) // X ^ X = 0 with counter 2 in every cell
			if v, r := f.Query(key); r != Unknown {
				t.Errorf("twice-inserted key: %d %v, want unknown", v, r)
			}
			if err := f.Delete(key, 3); err != nil {
				t.Fatal(err)
			}
			if v, r := f.Query(key); r != Found || v != 3 {
				t.Errorf("after one delete: %d %v", v, r)
			}
			f.Insert(key, 5) // X ^ Y: the pair decodes to {3, 5}, both fit every cell
			if v, r := f.Query(key); r != Unknown {
				t.Errorf("key with two values: %d %v, want unknown", v, r)
			}
		})
	}
}

func TestDeleteAbsentChangesNothing(t *testing.T) {
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.Capacity, o.FPRate = 2000, 1e-2
			f := newT(t, o)
			for i := uint64(0); i < 2000; i++ {
				f.Insert(hashmix.Mix(i), uint32(i)%uint32(o.Values))
			}
			before, st := snapshot(f), f.Stats()
			notFound, mismatch, tried := 0, 0, 0
			for i := uint64(5000); i < 7000; i++ {
				// A never-inserted key whose cells all fit a code is a
				// Bloom false positive, indistinguishable from a stored key;
				// every key the filter itself calls absent must be refused.
				if _, r := f.Query(hashmix.Mix(i)); r != Absent {
					continue
				}
				tried++
				err := f.Delete(hashmix.Mix(i), 1)
				switch {
				case errors.Is(err, ErrNotFound):
					notFound++
				case errors.Is(err, ErrMismatch):
					mismatch++
				default:
					t.Fatalf("delete of absent key: %v", err)
				}
			}
			// a stored key with the wrong value
			if err := f.Delete(hashmix.Mix(1), 2); !errors.Is(err, ErrMismatch) {
				t.Errorf("delete with wrong value: %v", err)
			}
			if err := f.Update(hashmix.Mix(1), 2, 3); !errors.Is(err, ErrMismatch) {
				t.Errorf("update with wrong old value: %v", err)
			}
			if err := f.Delete(1, uint32(o.Values)); !errors.Is(err, ErrValueRange) {
				t.Errorf("delete of out-of-range value: %v", err)
			}
			if !slices.Equal(before, snapshot(f)) {
				t.Fatal("a refused delete changed the cells")
			}
			if got := f.Stats(); got.Keys != st.Keys || got.Rejected != st.Rejected+uint64(tried)+2 {
				t.Errorf("stats %+v -> %+v", st, got)
			}
			t.Logf("refused: %d not found, %d mismatch, of %d absent keys", notFound, mismatch, tried)
		})
	}
}

func TestSaturatedCountersAreSticky(t *testing.T) {
	o := Options{Capacity: 100, FPRate: 1e-3, Values: 3000, Encoder: Sidon}
	f := newT(t, o)
	a, b := uint64(1), uint64(2)
	f.Insert(a, 10)
	for i := 0; i < 9; i++ { // 9 inserts of b: counters would wrap at 8
		f.Insert(b, uint32(i))
	}
	if st := f.Stats(); st.Saturated != uint64(f.k) {
		t.Errorf("saturated %d, want k=%d", st.Saturated, f.k)
	}
	if _, r := f.Query(b); r != Unknown {
		t.Errorf("b with 9 values: %v", r)
	}
	for i := 8; i >= 0; i-- {
		if err := f.Delete(b, uint32(i)); err != nil {
			t.Fatalf("delete %d: %v", i, err)
		}
	}
	// b's cells stay saturated (sticky) and never read as empty or as a code.
	var idx [MaxK]int
	f.locate(b, &idx)
	for j := 0; j < f.k; j++ {
		if f.cell(idx[j])&f.ctrMask != f.ctrMax {
			t.Fatalf("cell %d not sticky: %#x", idx[j], f.cell(idx[j]))
		}
	}
	if _, r := f.Query(b); r != Unknown {
		t.Errorf("deleted b over sticky cells: %v, want unknown", r)
	}
	if v, r := f.Query(a); r != Found || v != 10 {
		t.Errorf("a: %d %v", v, r)
	}
	// With 2-bit counters the cap is 3: a cell of 3 codes is saturated.
	o.CounterBits = 2
	g := newT(t, o)
	for i := 0; i < 3; i++ {
		g.Insert(b, uint32(i))
	}
	if st := g.Stats(); st.Saturated != uint64(g.k) {
		t.Errorf("2-bit counters: saturated %d", st.Saturated)
	}
}

func TestReplaceAndUpdate(t *testing.T) {
	f := newT(t, Options{Capacity: 1000, FPRate: 1e-4, Values: 100, Encoder: Sidon})
	for i := uint64(0); i < 1000; i++ {
		f.Insert(i, uint32(i%100))
	}
	for i := uint64(0); i < 1000; i++ {
		if err := f.Replace(i, uint32((i+1)%100)); err != nil {
			t.Fatal(err)
		}
	}
	for i := uint64(0); i < 1000; i++ {
		if v, r := f.Query(i); r != Found || v != uint32((i+1)%100) {
			t.Fatalf("key %d: %d %v", i, v, r)
		}
	}
	if err := f.Replace(1<<40, 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("replace absent: %v", err)
	}
}

// TestOverloadShare checks paper Fig. 4: at rho = 1 the share of cells
// holding three or more codes is P_n(1) = 0.0333.
func TestOverloadShare(t *testing.T) {
	if p := OverloadProb(1); math.Abs(p-0.03331) > 1e-4 {
		t.Fatalf("P_n(1) = %v", p)
	}
	for _, rho := range []float64{0.5, 1, 2, 3} {
		sum := 0.0
		for j := 0; j < 3; j++ {
			sum += CellLoadProb(j, rho)
		}
		if math.Abs(OverloadProb(rho)-(1-sum)) > 1e-12 {
			t.Errorf("rho %v: closed form %v, 1 - sum %v", rho, OverloadProb(rho), 1-sum)
		}
	}
	for _, lay := range []LayoutKind{Standard, Blocked} {
		// p = 2^-10 makes k = 10 exact; n at the p-capacity gives rho ~ 1.
		o := Options{Capacity: 50000, FPRate: 1.0 / 1024, Values: 3000, Encoder: Sidon, Layout: lay}
		f := newT(t, o)
		n := PCapacity(f.m, o.FPRate)
		for i := 0; i < n; i++ {
			f.Insert(hashmix.Mix(uint64(i)), 0)
		}
		over := 0
		for i := 0; i < f.m; i++ {
			if f.cell(i)&f.ctrMask >= 3 {
				over++
			}
		}
		rho := Rho(n, f.k, f.m)
		got, want := float64(over)/float64(f.m), OverloadProb(rho)
		sd := math.Sqrt(want * (1 - want) / float64(f.m))
		t.Logf("%v: rho=%.4f share of cells with >=3 codes %.5f, P_n(rho) %.5f (sd %.5f)", lay, rho, got, want, sd)
		if math.Abs(got-want) > 6*sd {
			t.Errorf("%v: measured %.5f vs P_n %.5f", lay, got, want)
		}
	}
}

func TestAnalysis(t *testing.T) {
	for _, p := range []float64{1e-3, 1e-4, 1e-5, 1e-6} {
		m := int(CellsFor(1000000, p))
		if c := PCapacity(m, p); math.Abs(float64(c)-1e6) > 2 {
			t.Errorf("p=%v: capacity of m=%d is %d", p, m, c)
		}
		if k := OptimalK(p); k != int(math.Round(math.Log2(1/p))) {
			t.Errorf("k(%v) = %d", p, k)
		}
	}
	if d := GlobalDecodability(1, 10); d < 0.999999 {
		t.Errorf("decodability at rho=1, k=10: %v", d)
	}
	if GlobalDecodability(4, 10) >= GlobalDecodability(2, 10) {
		t.Error("decodability should fall with rho")
	}
}

func TestNoAllocs(t *testing.T) {
	for _, c := range configs {
		o := c.o
		o.Capacity, o.FPRate = 10000, 1e-3
		f := newT(t, o)
		i := uint64(0)
		allocs := testing.AllocsPerRun(1000, func() {
			k := hashmix.Mix(i)
			f.Insert(k, 1)
			f.Query(k)
			f.Update(k, 1, 2)
			f.Delete(k, 2)
			f.Query(k + 1)
			i++
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocs per run", c.name, allocs)
		}
	}
}

func ExampleFilter() {
	f, _ := New(Options{Capacity: 1000, FPRate: 1e-4, Values: 12, Encoder: Sidon})
	f.Insert(42, 7)
	v, r := f.Query(42)
	_, r2 := f.Query(43)
	fmt.Println(v, r, r2)
	// Output: 7 found absent
}

func TestLayoutShapes(t *testing.T) {
	o := Options{Capacity: 100000, FPRate: 1e-3, Values: 12, Encoder: Sidon}
	f32 := newT(t, o)
	o.CellBits = 16
	f16 := newT(t, o)
	if cb := f32.CodebookBytes(); cb < 3*2*(1<<14) || cb > 1<<20 {
		t.Errorf("sidon codebook %d bytes", cb)
	}
	if 2*f16.MemoryBytes() > f32.MemoryBytes()+64 {
		t.Errorf("16-bit cells: %d bytes vs %d", f16.MemoryBytes(), f32.MemoryBytes())
	}
	for _, c := range []struct {
		bits, k, lines, want int
	}{{32, 10, 0, 3}, {32, 20, 0, 3}, {32, 30, 0, 4}, {16, 10, 0, 3}, {16, 20, 0, 3}, {32, 10, 2, 2}, {32, 10, 1, 1},
		{32, 10, 4, 4}, {16, 10, 4, 4}, {16, 20, 1, 1}, {32, 16, 1, 1}} {
		o := Options{Capacity: 1000, FPRate: math.Exp2(-float64(c.k)), Values: 12, Encoder: Sidon,
			Layout: Blocked, CellBits: c.bits, BlockLines: c.lines}
		f := newT(t, o)
		if f.groups != c.want || f.k != c.k {
			t.Errorf("%+v: k=%d lines=%d", c, f.k, f.groups)
		}
		// every key's cells are distinct and inside its lines
		var idx [MaxK]int
		for key := uint64(0); key < 1000; key++ {
			f.locate(key, &idx)
			seen := map[int]bool{}
			lines := map[int]bool{}
			for _, i := range idx[:f.k] {
				if seen[i] || i < 0 || i >= f.m {
					t.Fatalf("key %d: cells %v", key, idx[:f.k])
				}
				seen[i] = true
				lines[i/f.perLine] = true
			}
			if len(lines) > f.groups {
				t.Fatalf("key %d uses %d lines", key, len(lines))
			}
		}
	}
	bad := Options{Capacity: 1000, FPRate: 1e-6, Values: 12, Encoder: Sidon, Layout: Blocked, BlockLines: 1}
	if err := bad.Validate(); err == nil {
		t.Error("k = 20 cells in one 16-cell line accepted")
	}
	// standard: k distinct cells for every key
	var idx [MaxK]int
	for key := uint64(0); key < 1000; key++ {
		f32.locate(key, &idx)
		s := slices.Clone(idx[:f32.k])
		slices.Sort(s)
		if len(slices.Compact(s)) != f32.k {
			t.Fatalf("key %d: repeated cells %v", key, idx[:f32.k])
		}
	}
}

// TestQueryPaper: the paper's rules find stored keys and let absent keys
// through at about the Bloom rate p, where Query's checked decode lets
// (almost) none through.
func TestQueryPaper(t *testing.T) {
	const n = 20000
	o := Options{Capacity: n, FPRate: 1e-2, Values: 3000, Encoder: Sidon}
	f := newT(t, o)
	for i := 0; i < n; i++ {
		f.Insert(hashmix.Mix(uint64(i)), uint32(i%3000))
	}
	fn, paperFP, fp := 0, 0, 0
	for i := 0; i < n; i++ {
		if v, r := f.QueryPaper(hashmix.Mix(uint64(i))); r != Found || v != uint32(i%3000) {
			fn++
		}
		if _, r := f.QueryPaper(hashmix.Mix(uint64(i + n))); r == Found {
			paperFP++
		}
		if _, r := f.Query(hashmix.Mix(uint64(i + n))); r == Found {
			fp++
		}
	}
	t.Logf("paper rules: %d misses, %d false positives of %d (p n = %.0f); checked decode: %d", fn, paperFP, n, o.FPRate*n, fp)
	if fn > n/100 || float64(paperFP) < o.FPRate*n/3 || float64(paperFP) > 3*o.FPRate*n || fp > paperFP/10 {
		t.Errorf("paper rules: %d misses, %d fp; checked: %d fp", fn, paperFP, fp)
	}
}

// TestRefusedOpsNoAllocs: a delete or update the cells refuse (the ACSM
// meets these under a flood, on the packet path) allocates nothing.
func TestRefusedOpsNoAllocs(t *testing.T) {
	f, err := New(Options{Capacity: 1000, FPRate: 0.01, Values: 16})
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if f.Delete(12345, 3) == nil || f.Update(12345, 3, 4) == nil {
			t.Fatal("absent key accepted")
		}
	}); n != 0 {
		t.Errorf("refused Delete/Update allocate %v times", n)
	}
}

func TestParseNames(t *testing.T) {
	for _, e := range []EncoderKind{Greedy, Sidon} {
		if got, err := ParseEncoder(e.String()); got != e || err != nil {
			t.Errorf("ParseEncoder(%q) = %v, %v", e, got, err)
		}
	}
	for _, l := range []LayoutKind{Standard, Blocked} {
		if got, err := ParseLayout(l.String()); got != l || err != nil {
			t.Errorf("ParseLayout(%q) = %v, %v", l, got, err)
		}
	}
	if _, err := ParseEncoder("x"); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("ParseEncoder(x): %v", err)
	}
	if _, err := ParseLayout(""); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("ParseLayout(empty): %v", err)
	}
}

// TestReset checks that Reset empties a filter in place: every key
// absent, cells and Stats zero, nothing allocated, and the filter as
// usable as a new one with the same seed (same answers after the same
// inserts).
func TestReset(t *testing.T) {
	for _, o := range smallLayouts {
		f, fresh := newT(t, o), newT(t, o)
		for j := 0; j < 3*o.Capacity; j++ { // overloaded: saturated cells too
			f.Insert(benchKey(j), uint32(j%o.Values))
		}
		if f.Stats().Saturated == 0 {
			t.Fatalf("%+v: no saturated cell to reset", o)
		}
		if n := testing.AllocsPerRun(10, f.Reset); n != 0 {
			t.Errorf("%+v: Reset allocates %v times", o, n)
		}
		if f.Stats() != (Stats{}) || slices.ContainsFunc(f.c32, func(c uint32) bool { return c != 0 }) ||
			slices.ContainsFunc(f.c16, func(c uint16) bool { return c != 0 }) {
			t.Fatalf("%+v: Reset left cells or Stats", o)
		}
		for j := 0; j < o.Capacity; j++ {
			if _, r := f.Query(benchKey(j)); r != Absent {
				t.Fatalf("%+v: key %d is %v after Reset", o, j, r)
			}
		}
		for j := 0; j < o.Capacity; j++ {
			f.Insert(benchKey(j), uint32(j%o.Values))
			fresh.Insert(benchKey(j), uint32(j%o.Values))
		}
		for j := 0; j < 2*o.Capacity; j++ {
			v, r := f.Query(benchKey(j))
			w, s := fresh.Query(benchKey(j))
			if v != w || r != s {
				t.Fatalf("%+v: key %d: reset filter %v %d, new filter %v %d", o, j, r, v, s, w)
			}
		}
	}
}
