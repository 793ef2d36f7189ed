package cms

import "testing"

// TestClear: Clear leaves the sketch as new, as Reset does.
func TestClear(t *testing.T) {
	s, err := New(1e-3, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	for k := range uint64(1000) {
		s.Add(k, uint32(k))
	}
	s.Clear()
	for k := range uint64(1000) {
		if e := s.Estimate(k); e != 0 {
			t.Fatalf("key %d: estimate %d after Clear", k, e)
		}
	}
	if s.Total() != 0 {
		t.Errorf("total %d after Clear", s.Total())
	}
}
