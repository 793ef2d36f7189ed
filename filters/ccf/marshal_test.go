package ccf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/zeebo/xxh3"
)

func sampleFilter(t testing.TB, o Options, n int) *Filter {
	f := mustNew(t, o)
	r := rand.New(rand.NewPCG(uint64(n), 1))
	for range n {
		if _, err := f.Insert(r.Uint64(), 1+r.Uint64N(9)); err != nil {
			break
		}
	}
	return f
}

func TestMarshalRoundTrip(t *testing.T) {
	for _, o := range []Options{
		{Capacity: 500, FingerprintBits: 7, CounterBits: 8, Seed: 3},
		{Capacity: 300, FingerprintBits: 56, CounterBits: 8, MaxLevels: 3},
		{Buckets: 16, FingerprintBits: 12, CounterBits: 3, BucketSize: 2, StashSize: 3, MaxKicks: 10},
	} {
		f := sampleFilter(t, o, 700)
		b, err := f.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var g Filter
		if err := g.UnmarshalBinary(b); err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		b2, _ := g.MarshalBinary()
		if !bytes.Equal(b, b2) {
			t.Fatalf("%+v: round trip differs", o)
		}
		if f.Stats() != g.Stats() {
			t.Errorf("stats %+v vs %+v", f.Stats(), g.Stats())
		}
		r := rand.New(rand.NewPCG(700, 1))
		for range 700 {
			k := r.Uint64()
			r.Uint64N(9)
			if f.Count(k) != g.Count(k) {
				t.Fatalf("count of %x differs", k)
			}
		}
	}
}

func TestUnmarshalRejects(t *testing.T) {
	f := sampleFilter(t, Options{Capacity: 200, FingerprintBits: 9, CounterBits: 7}, 150)
	good, _ := f.MarshalBinary()
	other := sampleFilter(t, Options{Capacity: 50}, 10)
	want, _ := other.MarshalBinary()
	for name, b := range map[string][]byte{
		"empty":     nil,
		"short":     good[:20],
		"truncated": good[:len(good)-9],
		"flipped":   append(append([]byte{}, good[:50]...), append([]byte{good[50] ^ 1}, good[51:]...)...),
		"magic":     append([]byte("XCCF"), good[4:]...),
	} {
		err := other.UnmarshalBinary(b)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err %v", name, err)
		}
		got, _ := other.MarshalBinary()
		if !bytes.Equal(got, want) {
			t.Errorf("%s: receiver changed", name)
		}
	}
}

func FuzzUnmarshalBinary(f *testing.F) {
	for _, o := range []Options{
		{Capacity: 20, FingerprintBits: 7, CounterBits: 8},
		{Buckets: 3, FingerprintBits: 60, CounterBits: 4, MaxLevels: 2, StashSize: 1, MaxKicks: 1},
	} {
		g := sampleFilter(f, o, 40)
		b, _ := g.MarshalBinary()
		f.Add(b)
	}
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
	recv := sampleFilter(t, Options{Capacity: 10}, 5)
	before, _ := recv.MarshalBinary()
	if err := recv.UnmarshalBinary(data); err != nil {
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error %v is not ErrCorrupt", err)
		}
		after, _ := recv.MarshalBinary()
		if !bytes.Equal(before, after) {
			t.Fatal("receiver changed on error")
		}
		return
	}
	out, err := recv.MarshalBinary()
	if err != nil || !bytes.Equal(out, data) {
		t.Fatalf("accepted input does not round trip: %v", err)
	}
	recv.Insert(1, 1)
	recv.Count(2)
	recv.Delete(1)
}
