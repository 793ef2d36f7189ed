package hll

import "testing"

// TestSpreadClear: Clear leaves the sketch as new, as Reset does.
func TestSpreadClear(t *testing.T) {
	s, err := NewSpread(128, 2, 6)
	if err != nil {
		t.Fatal(err)
	}
	for i := range uint64(10000) {
		s.Add(i%100, i)
	}
	s.Clear()
	for k := range uint64(100) {
		if e := s.Estimate(k); e != 0 {
			t.Fatalf("key %d: estimate %v after Clear", k, e)
		}
	}
}
