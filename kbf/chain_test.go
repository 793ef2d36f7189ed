package kbf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"github.com/flowmon/flowmon/internal/hashmix"
	"hash/crc32"
	"testing"
)

// TestChainGrowth: a chain grows by one filter of the same size each time
// the newest reaches its p-capacity; every key stays readable, and each
// filter's false-positive rate stays near p.
func TestChainGrowth(t *testing.T) {
	o := Options{Capacity: 2000, FPRate: 1e-3, Values: 3000, Encoder: Sidon}
	c, err := NewChain(o)
	if err != nil {
		t.Fatal(err)
	}
	capacity := c.Filters()[0].Capacity()
	n := 5 * capacity
	for i := 0; i < n; i++ {
		if err := c.Insert(hashmix.Mix(uint64(i)), uint32(i%3000)); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(c.Filters()); got != 5 {
		t.Errorf("%d keys at capacity %d: %d filters, want 5", n, capacity, got)
	}
	if c.MemoryBytes() != 5*c.Filters()[0].MemoryBytes() {
		t.Error("filters differ in size")
	}
	wrong, unknown, fp := 0, 0, 0
	for i := 0; i < n; i++ {
		v, r := c.Query(hashmix.Mix(uint64(i)))
		if r == Unknown {
			unknown++
		} else if r != Found || v != uint32(i%3000) {
			wrong++
		}
		if _, r := c.Query(hashmix.Mix(uint64(i + n))); r == Found {
			fp++
		}
	}
	t.Logf("5 filters: %d wrong, %d unknown, %d false positives of %d", wrong, unknown, fp, n)
	if wrong != 0 || unknown > n/100 || float64(fp) > 5*3*o.FPRate*float64(n)+5 {
		t.Errorf("chain: %d wrong, %d unknown, %d false positives", wrong, unknown, fp)
	}
	// Delete and update reach the filter that holds the key.
	if err := c.Update(hashmix.Mix(1), 1, 2); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(hashmix.Mix(uint64(n-1)), uint32((n-1)%3000)); err != nil {
		t.Fatal(err)
	}
	if _, r := c.Query(hashmix.Mix(uint64(n - 1))); r != Absent {
		t.Errorf("deleted key: %v", r)
	}
	// Delete most keys, then compaction merges the filters back.
	for i := 0; i < n-1; i++ {
		if i%10 == 0 {
			continue
		}
		v := uint32(i % 3000)
		if i == 1 {
			v = 2
		}
		if err := c.Delete(hashmix.Mix(uint64(i)), v); err != nil {
			t.Fatalf("delete %d: %v", i, err)
		}
	}
	removed, err := c.Compact()
	if err != nil {
		t.Fatal(err)
	}
	if removed != 4 {
		t.Errorf("compaction removed %d filters, want 4", removed)
	}
	unknown = 0
	for i := 0; i < n-1; i += 10 {
		v, r := c.Query(hashmix.Mix(uint64(i)))
		if r == Unknown {
			unknown++
		} else if r != Found || v != uint32(i%3000) {
			t.Fatalf("after compaction key %d: %d %v", i, v, r)
		}
	}
	t.Logf("after compaction to 1 filter: %d of %d kept keys unknown", unknown, n/10)
}

// TestMergeKeepsAndLoses: the merged filter holds the union; every key is
// consistent with its cells, but the summed load makes keys undecodable and
// raises the false-positive rate, which is what compaction loses. Four
// filters at their p-capacity merge to rho = 4.
func TestMergeKeepsAndLoses(t *testing.T) {
	o := Options{Capacity: 10000, FPRate: 1e-2, Values: 3000, Encoder: Sidon}
	val := func(i int) uint32 { return uint32(i % 3000) }
	var fs []*Filter
	n := 10000
	for j := 0; j < 4; j++ {
		f := newT(t, o)
		for i := j * n; i < (j+1)*n; i++ {
			f.Insert(hashmix.Mix(uint64(i)), val(i))
		}
		fs = append(fs, f)
	}
	count := func(f *Filter, keys int) (unknown, fp int) {
		for i := 0; i < keys; i++ {
			v, r := f.Query(hashmix.Mix(uint64(i)))
			if r == Unknown {
				unknown++
			} else if r != Found || v != val(i) {
				t.Fatalf("key %d: %d %v", i, v, r)
			}
			if _, r := f.Query(hashmix.Mix(uint64(i + 100*n))); r == Found {
				fp++
			}
		}
		return
	}
	u1, f1 := count(fs[0], n)
	m := fs[0]
	for _, g := range fs[1:] {
		var err error
		if m, err = Merge(m, g); err != nil {
			t.Fatal(err)
		}
	}
	u4, f4 := count(m, 4*n)
	t.Logf("one filter (rho 1): %d unknown, %d fp of %d; four merged (rho 4): %d unknown, %d fp of %d; %d saturated cells",
		u1, f1, n, u4, f4, 4*n, m.Stats().Saturated)
	if u4 <= u1 || f4 <= f1 {
		t.Error("merging at four times the load lost nothing?")
	}
	if m.Stats().Keys != uint64(4*n) || m.MemoryBytes() != fs[0].MemoryBytes() {
		t.Errorf("merged keys %d, %d bytes", m.Stats().Keys, m.MemoryBytes())
	}
	o2 := o
	o2.Seed = 9
	if _, err := Merge(fs[0], newT(t, o2)); !errors.Is(err, ErrIncompatible) {
		t.Errorf("merge of different seeds: %v", err)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	cs := append(configs[:len(configs):len(configs)], struct {
		name string
		o    Options
	}{"sidon/blocked1/32", Options{Values: 100, Encoder: Sidon, Layout: Blocked, BlockLines: 1, SizeFactor: 1.5}})
	for _, c := range cs {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.Capacity, o.FPRate, o.Seed = 3000, 1e-3, 3
			f := newT(t, o)
			for i := 0; i < 3000; i++ {
				f.Insert(hashmix.Mix(uint64(i)), uint32(i%o.Values))
			}
			data, err := f.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var g Filter
			if err := g.UnmarshalBinary(data); err != nil {
				t.Fatal(err)
			}
			again, _ := g.MarshalBinary()
			if !bytes.Equal(data, again) || g.Stats() != f.Stats() || g.Options() != f.Options() || g.groups != f.groups {
				t.Fatal("round trip differs")
			}
			for i := 0; i < 3000; i++ {
				v1, r1 := f.Query(hashmix.Mix(uint64(i)))
				v2, r2 := g.Query(hashmix.Mix(uint64(i)))
				if v1 != v2 || r1 != r2 {
					t.Fatalf("key %d: %d %v vs %d %v", i, v1, r1, v2, r2)
				}
			}
			// every corruption is refused and leaves the receiver unchanged.
			before, _ := g.MarshalBinary()
			for _, bad := range [][]byte{data[:10], data[:len(data)-1], append(data[:len(data):len(data)], 0),
				flip(data, 0), flip(data, 4), flip(data, 50), flip(data, headerSize+3), flip(data, len(data)-1)} {
				if err := g.UnmarshalBinary(bad); !errors.Is(err, ErrFormat) {
					t.Errorf("corrupt input accepted: %v", err)
				}
			}
			if after, _ := g.MarshalBinary(); !bytes.Equal(before, after) {
				t.Error("failed unmarshal changed the receiver")
			}
		})
	}
}

// TestUnmarshalVersion1 reads version-1 files of the standard layout,
// whose placement is unchanged, and refuses those of the blocked layout.
func TestUnmarshalVersion1(t *testing.T) {
	for _, lay := range []LayoutKind{Standard, Blocked} {
		f := newT(t, Options{Capacity: 1000, FPRate: 1e-3, Values: 100, Encoder: Sidon, Layout: lay})
		for i := 0; i < 1000; i++ {
			f.Insert(hashmix.Mix(uint64(i)), uint32(i%100))
		}
		data, _ := f.MarshalBinary()
		data[4] = 1
		body := data[:len(data)-4]
		binary.LittleEndian.PutUint32(data[len(body):], crc32.Checksum(body, crcTable))
		var g Filter
		err := g.UnmarshalBinary(data)
		if lay == Standard && err != nil {
			t.Errorf("version-1 standard filter refused: %v", err)
		}
		if lay == Blocked && !errors.Is(err, ErrFormat) {
			t.Errorf("version-1 blocked filter accepted: %v", err)
		}
	}
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x40
	return c
}

func FuzzUnmarshalBinary(f *testing.F) {
	for _, o := range []Options{
		{Capacity: 10, FPRate: 0.01, Values: 4},
		{Capacity: 20, FPRate: 0.001, Values: 12, Encoder: Sidon, CellBits: 16, Layout: Blocked},
		{Capacity: 20, FPRate: 0.001, Values: 12, Encoder: Sidon, Layout: Blocked}, // the line form (lines.go)
	} {
		k, _ := New(o)
		k.Insert(1, 1)
		data, _ := k.MarshalBinary()
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var k Filter
		if err := k.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			if k.m != 0 {
				t.Fatal("receiver changed on error")
			}
			return
		}
		again, err := k.MarshalBinary()
		if err != nil || !bytes.Equal(again, data) {
			t.Fatal("round trip differs")
		}
		k.Query(1)
		k.Insert(2, 0)
		k.Delete(2, 0)
	})
}
