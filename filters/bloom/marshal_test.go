package bloom

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

func sample(blocked bool) *Filter {
	f, _ := NewWithOptions(Options{Elements: 300, FPRate: 0.01, Blocked: blocked})
	r := rand.New(rand.NewPCG(9, 9))
	for i := 0; i < 200; i++ {
		f.Add(r.Uint64())
	}
	return f
}

func TestMarshalRoundTrip(t *testing.T) {
	for _, blocked := range []bool{false, true} {
		f := sample(blocked)
		b, err := f.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if want := headerSize + 8*len(f.words) + crcSize; len(b) != want {
			t.Fatalf("encoding is %d bytes, want %d", len(b), want)
		}
		var g Filter
		if err := g.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		if !f.Equal(&g) {
			t.Fatal("round trip changed the filter")
		}
		pre := []byte("prefix")
		a, _ := f.AppendBinary(pre)
		if !bytes.Equal(a[len(pre):], b) {
			t.Fatal("AppendBinary differs from MarshalBinary")
		}
	}
}

func TestUnmarshalRejects(t *testing.T) {
	good, _ := sample(false).MarshalBinary()
	orig := sample(true)
	mutate := func(f func(b []byte) []byte) []byte {
		return f(bytes.Clone(good))
	}
	cases := map[string][]byte{
		"empty":     nil,
		"short":     good[:20],
		"truncated": good[:len(good)-1],
		"long":      append(bytes.Clone(good), 0),
		"magic":     mutate(func(b []byte) []byte { b[0] = 'X'; return b }),
		"version":   mutate(func(b []byte) []byte { b[4] = 2; return b }),
		"layout":    mutate(func(b []byte) []byte { b[5] = 7; return b }),
		"k=0":       mutate(func(b []byte) []byte { b[6] = 0; return b }),
		"reserved":  mutate(func(b []byte) []byte { b[7] = 1; return b }),
		"huge m":    mutate(func(b []byte) []byte { b[15] = 0x7f; return b }),
		"checksum":  mutate(func(b []byte) []byte { b[30] ^= 1; return b }),
	}
	for name, b := range cases {
		g := sample(true)
		err := g.UnmarshalBinary(b)
		if !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v, want ErrFormat", name, err)
		}
		if !g.Equal(orig) {
			t.Errorf("%s: receiver changed on error", name)
		}
	}
}

func FuzzUnmarshalBinary(f *testing.F) {
	for _, blocked := range []bool{false, true} {
		b, _ := sample(blocked).MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte("FMBL\x01\x00\x03\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		g := sample(false)
		before, _ := g.MarshalBinary()
		if err := g.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			after, _ := g.MarshalBinary()
			if !bytes.Equal(before, after) {
				t.Fatal("receiver changed on error")
			}
			return
		}
		again, err := g.MarshalBinary()
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("accepted input does not round trip")
		}
		g.Test(12345)
	})
}
