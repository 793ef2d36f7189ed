package ccfeval

import (
	"bytes"
	"strings"
	"testing"
)

// TestRunSmall runs the evaluation on a small workload and checks the
// orderings the paper reports: more bits never hurt the CCF, and at equal
// bits the CCF beats the CBF.
func TestRunSmall(t *testing.T) {
	w := NewWorkload(4000, 0.1, 0.1, 1)
	if w.CardA != 40000 || len(w.A) != 4000 || len(w.B) != 4000 {
		t.Fatalf("workload: card %d, %d/%d elements", w.CardA, len(w.A), len(w.B))
	}
	lo, err := runRow(w, 4000, 16)
	if err != nil {
		t.Fatal(err)
	}
	hi, err := runRow(w, 4000, 64)
	if err != nil {
		t.Fatal(err)
	}
	if hi.QueryAcc != 1 || hi.DecodeAcc != 1 {
		t.Errorf("64 bpe: accuracy %v / %v, want 1", hi.QueryAcc, hi.DecodeAcc)
	}
	if lo.QueryAcc < lo.CBFAcc || lo.QueryAcc <= w.initialAccuracy() {
		t.Errorf("16 bpe: CCF %v, CBF %v, initial %v", lo.QueryAcc, lo.CBFAcc, w.initialAccuracy())
	}
	var out bytes.Buffer
	if err := Run(Config{N: 2000, BPE: []int{16, 32}, OccFrom: 6, OccTo: 7, Quick: true}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "| 32 |") || !strings.Contains(out.String(), "| 128 |") {
		t.Errorf("table:\n%s", out.String())
	}
}
