package scbfeval

import (
	"math"
	"strings"
	"testing"

	"github.com/flowmon/flowmon/internal/testutil/testgate"
)

// TestEvalRuns runs the evaluation small (the full one when
// FLOWMON_LONG=1) and checks its claims: every variant with the (1-r)
// factor measures under P, dablooms' schedule at 0.9 over it at 100x.
func TestEvalRuns(t *testing.T) {
	c := Config{Capacity: 500, Trials: 100_000, Seed: 1}
	if testgate.Enabled() {
		c = Config{Seed: 1}
	}
	c = c.withDefaults()
	res, err := Measure(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rows {
		tol := 4 * math.Sqrt(c.ErrorRate/float64(c.Trials))
		if !r.Variant.Dablooms && r.Measured > c.ErrorRate+tol {
			t.Errorf("%s at %dx: measured %g above P", r.Variant.Name, r.Scale, r.Measured)
		}
		if r.Variant.Dablooms && r.Scale == 100 && r.Measured < 5*c.ErrorRate {
			t.Errorf("%s at 100x: measured %g, expected near 9P", r.Variant.Name, r.Measured)
		}
		if r.Subfilters != r.Scale {
			t.Errorf("%s at %dx: %d sub-filters", r.Variant.Name, r.Scale, r.Subfilters)
		}
	}
	for v, m := range res.Memory {
		if len(m) != 100 || m[0] >= m[99] {
			t.Errorf("variant %d: memory at 1..100 sub-filters %v", v, m)
		}
	}
	var b strings.Builder
	if err := Run(&b, c); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| r | scale |", "## The choice", "9P"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("report lacks %q", s)
		}
	}
	if testing.Verbose() {
		t.Log("\n" + b.String())
	}
}
