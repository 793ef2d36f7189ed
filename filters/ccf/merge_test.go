package ccf

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

func TestMergeAgainstReference(t *testing.T) {
	o := Options{Capacity: 6000, FingerprintBits: 40, CounterBits: 16}
	a, b := mustNew(t, o), mustNew(t, o)
	ref := map[uint64]uint64{}
	r := rand.New(rand.NewPCG(31, 32))
	for i := range 5000 {
		k, n := r.Uint64()%4000, 1+r.Uint64N(7)
		if i%2 == 0 {
			a.Insert(k, n)
		} else {
			b.Insert(k, n)
		}
		ref[k] += n
	}
	if err := a.Merge(b); err != nil {
		t.Fatal(err)
	}
	var total uint64
	for k, n := range ref {
		if a.Count(k) != n {
			t.Fatalf("key %d: %d want %d", k, a.Count(k), n)
		}
		total += n
	}
	if st := a.Stats(); st.Distinct != uint64(len(ref)) || st.Total != total {
		t.Errorf("stats %+v, want %d distinct, %d total", st, len(ref), total)
	}
	if err := a.Merge(mustNew(t, Options{Capacity: 10})); !errors.Is(err, ErrIncompatible) {
		t.Errorf("merge of other shape: %v", err)
	}
}

func TestMergeFullLeavesReceiver(t *testing.T) {
	o := Options{Buckets: 8, FingerprintBits: 30, CounterBits: 8, StashSize: 1}
	a, b := mustNew(t, o), mustNew(t, o)
	for i := uint64(0); ; i++ {
		if _, err := a.Insert(i, 1); err != nil {
			break
		}
	}
	for i := uint64(1000); i < 1010; i++ {
		b.Insert(i, 1)
	}
	before, _ := a.MarshalBinary()
	if err := a.Merge(b); !errors.Is(err, ErrFull) {
		t.Fatalf("merge into a full filter: %v", err)
	}
	if after, _ := a.MarshalBinary(); !bytes.Equal(before, after) {
		t.Error("failed merge changed the receiver")
	}
}
