package cbf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/zeebo/xxh3"
)

func mustNew(t testing.TB, o Options) *Filter {
	t.Helper()
	f, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		okay bool
	}{
		{Options{Capacity: 100}, true},
		{Options{Cells: 64, Hashes: 3, CounterBits: 4}, true},
		{Options{}, false},
		{Options{Capacity: 100, CounterBits: 5}, false},
		{Options{Capacity: 100, FPRate: 2}, false},
		{Options{Cells: 10, Hashes: 40}, false},
	} {
		err := tc.o.Validate()
		if (err == nil) != tc.okay || (err != nil && !errors.Is(err, ErrInvalidOptions)) {
			t.Errorf("%+v: %v", tc.o, err)
		}
	}
	o := Options{Capacity: 1000, FPRate: 0.01}.withDefaults()
	if o.Cells != 9586 || o.Hashes != 7 {
		t.Errorf("sizing: %d cells, %d hashes", o.Cells, o.Hashes)
	}
}

func TestAgainstReference(t *testing.T) {
	for _, c := range []int{4, 8, 16, 32} {
		f := mustNew(t, Options{Capacity: 5000, FPRate: 0.01, CounterBits: c})
		ref := map[uint64]uint64{}
		r := rand.New(rand.NewPCG(uint64(c), 1))
		keys := make([]uint64, 5000)
		for i := range keys {
			keys[i] = r.Uint64()
		}
		for range 20000 {
			k := keys[r.IntN(len(keys))]
			f.Add(k, 1)
			ref[k]++
		}
		for _, k := range keys[:1000] {
			// Removing what was never added corrupts any CBF: only
			// remove present keys.
			if ref[k] > 0 {
				f.Remove(k, 1)
				ref[k]--
			}
		}
		over := 0
		for _, k := range keys {
			got, want := f.Count(k), ref[k]
			if got < want && f.Stats().Saturations == 0 {
				t.Fatalf("c=%d: under-count %d < %d", c, got, want)
			}
			if got != want {
				over++
			}
		}
		t.Logf("c=%d: %d/%d over-counted, %d saturations", c, over, len(keys), f.Stats().Saturations)
	}
}

func TestFalsePositiveRate(t *testing.T) {
	for _, p := range []float64{0.1, 0.01, 0.001} {
		f := mustNew(t, Options{Capacity: 20000, FPRate: p})
		r := rand.New(rand.NewPCG(2, 3))
		for range 20000 {
			f.Add(r.Uint64(), 3)
		}
		const trials = 200000
		fp := 0
		for range trials {
			if f.Test(r.Uint64()) {
				fp++
			}
		}
		rate, want := float64(fp)/trials, f.FalsePositiveRate(20000)
		slack := 4 * math.Sqrt(want*(1-want)/trials)
		if rate > want*1.1+slack {
			t.Errorf("target %v: measured %.5f > analytic %.5f", p, rate, want)
		}
		t.Logf("target %v: measured %.5f, analytic (1-e^-kn/m)^k %.5f", p, rate, want)
	}
}

func TestSaturationAndSubtract(t *testing.T) {
	f := mustNew(t, Options{Cells: 100, Hashes: 3, CounterBits: 4})
	if c := f.Add(1, 20); c != 15 {
		t.Fatalf("count %d, want 15", c)
	}
	if c := f.Remove(1, 5); c != 15 {
		t.Fatalf("saturated cells lowered: %d", c)
	}
	if f.Stats().Saturations != 1 {
		t.Errorf("saturations %d", f.Stats().Saturations)
	}
	a := mustNew(t, Options{Cells: 1000, Hashes: 3})
	b := mustNew(t, Options{Cells: 1000, Hashes: 3})
	a.Add(7, 5)
	b.Add(7, 2)
	a.Add(8, 1)
	b.Add(8, 4)
	if err := a.Subtract(b); err != nil {
		t.Fatal(err)
	}
	if a.Count(7) != 3 || a.Count(8) != 0 {
		t.Errorf("difference: %d %d", a.Count(7), a.Count(8))
	}
	if err := a.Subtract(f); !errors.Is(err, ErrIncompatible) {
		t.Errorf("subtract of other shape: %v", err)
	}
}

func TestMarshal(t *testing.T) {
	f := mustNew(t, Options{Capacity: 300, CounterBits: 16, Seed: 4})
	for i := range uint64(200) {
		f.Add(i*7919, i%9+1)
	}
	b, _ := f.MarshalBinary()
	var g Filter
	if err := g.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	b2, _ := g.MarshalBinary()
	if !bytes.Equal(b, b2) || g.Count(7919*5) != f.Count(7919*5) {
		t.Fatal("round trip differs")
	}
	keep, _ := g.MarshalBinary()
	for _, bad := range [][]byte{nil, b[:30], b[:len(b)-1], append([]byte("XCBF"), b[4:]...)} {
		if err := g.UnmarshalBinary(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("accepted bad input: %v", err)
		}
	}
	if now, _ := g.MarshalBinary(); !bytes.Equal(now, keep) {
		t.Error("receiver changed on error")
	}
}

func FuzzUnmarshalBinary(f *testing.F) {
	g := mustNew(f, Options{Cells: 33, Hashes: 2, CounterBits: 4})
	g.Add(1, 3)
	b, _ := g.MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		// The checksum would stop the fuzzer at the first byte it
		// changes: also try the input with its checksum recomputed, to
		// reach the structural checks.
		fuzzOne(t, data)
		if len(data) >= 8 {
			fixed := append([]byte{}, data[:len(data)-8]...)
			fuzzOne(t, binary.LittleEndian.AppendUint64(fixed, xxh3.Hash(fixed)))
		}
	})
}

func fuzzOne(t *testing.T, data []byte) {
	recv := mustNew(t, Options{Cells: 10, Hashes: 1})
	before, _ := recv.MarshalBinary()
	if err := recv.UnmarshalBinary(data); err != nil {
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error %v not ErrCorrupt", err)
		}
		if after, _ := recv.MarshalBinary(); !bytes.Equal(before, after) {
			t.Fatal("receiver changed on error")
		}
		return
	}
	if out, _ := recv.MarshalBinary(); !bytes.Equal(out, data) {
		t.Fatal("no round trip")
	}
	recv.Add(5, 1)
	recv.Count(6)
}

var sink uint64

func TestNoAllocs(t *testing.T) {
	f := mustNew(t, Options{Capacity: 1000})
	var i uint64
	for name, fn := range map[string]func(){
		"add":    func() { f.Add(i, 1); i++ },
		"count":  func() { sink += f.Count(i); i++ },
		"remove": func() { f.Remove(i, 1); i++ },
	} {
		if a := testing.AllocsPerRun(1000, fn); a != 0 {
			t.Errorf("%s: %v allocs", name, a)
		}
	}
}

func BenchmarkAdd(b *testing.B) {
	f := mustNew(b, Options{Capacity: 1_000_000, FPRate: 0.01})
	b.ReportAllocs()
	var i uint64
	for b.Loop() {
		f.Add(i%1_000_000*0x9e3779b97f4a7c15, 1)
		i++
	}
}

func BenchmarkCount(b *testing.B) {
	f := mustNew(b, Options{Capacity: 1_000_000, FPRate: 0.01})
	for i := range uint64(1_000_000) {
		f.Add(i*0x9e3779b97f4a7c15, 1)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var i uint64
	for b.Loop() {
		sink += f.Count(i % 1_000_000 * 0x9e3779b97f4a7c15)
		i++
	}
}
