package ccf

import (
	"bytes"
	"testing"
)

// TestResumeGoesOnAsTheOriginal: a filter decoded from another's encoding
// and resumed with its eviction state places the next keys as the
// original does, kicks included (the filter is filled past the load where
// buckets overflow), where one decoded alone diverges.
func TestResumeGoesOnAsTheOriginal(t *testing.T) {
	o := Options{Capacity: 4000, FPRate: 1e-4, Seed: 7}
	orig, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	for k := range uint64(3000) {
		orig.Insert(k*0x9e3779b97f4a7c15, 1+k%3)
	}
	enc, err := orig.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	like, _ := New(o)
	resumed, plain := new(Filter), new(Filter)
	if err := resumed.UnmarshalBinary(enc); err != nil {
		t.Fatal(err)
	}
	if err := plain.UnmarshalBinary(enc); err != nil {
		t.Fatal(err)
	}
	if err := resumed.Resume(orig.KickState(), like); err != nil {
		t.Fatal(err)
	}
	for k := uint64(3000); k < 4400; k++ {
		orig.Insert(k*0x9e3779b97f4a7c15, 1)
		resumed.Insert(k*0x9e3779b97f4a7c15, 1)
		plain.Insert(k*0x9e3779b97f4a7c15, 1)
	}
	a, _ := orig.MarshalBinary()
	b, _ := resumed.MarshalBinary()
	c, _ := plain.MarshalBinary()
	if !bytes.Equal(a, b) {
		t.Error("the resumed filter went on otherwise than the original")
	}
	if bytes.Equal(a, c) {
		t.Error("a filter decoded without its eviction state went on as the original: the test does not reach a kick")
	}
	if resumed.Options() != orig.Options() {
		t.Errorf("options %+v, original %+v", resumed.Options(), orig.Options())
	}
	if err := resumed.Resume(0, like); err == nil {
		t.Error("Resume took an eviction state of 0")
	}
	other, _ := New(Options{Capacity: 40000, FPRate: 1e-4, Seed: 7})
	if err := resumed.Resume(5, other); err == nil {
		t.Error("Resume took the options of a filter of another shape")
	}
}
