package evalstat

import (
	"math"
	"testing"
)

// TestUpperBound pins the one-sided 95% Clopper-Pearson bounds to values
// computed from the binomial distribution's sum by bisection, and checks
// the bound for many trials against the normal approximation, which holds
// there.
func TestUpperBound(t *testing.T) {
	for _, c := range []struct {
		k, n uint64
		want float64
	}{
		{0, 14, 0.1926361756501353},
		{1, 10, 0.3941633024365049},
		{5, 100, 0.10225337764327452},
		{3, 1000, 0.007735244718479473},
		{50, 200, 0.305467356649194},
		{0, 0, 1},
		{7, 7, 1},
	} {
		if got := UpperBound(c.k, c.n, 0.95); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("UpperBound(%d, %d) = %.12g, want %.12g", c.k, c.n, got, c.want)
		}
	}
	// Many trials: p + 1.645σ, to within the approximation's skew.
	k, n := uint64(10_000), uint64(10_000_000)
	p := float64(k) / float64(n)
	normal := p + 1.645*math.Sqrt(p*(1-p)/float64(n))
	if got := UpperBound(k, n, 0.95); math.Abs(got-normal) > 0.02*(normal-p) {
		t.Errorf("UpperBound(%d, %d) = %g, normal approximation %g", k, n, got, normal)
	}
	// The rule of three.
	if got := UpperBound(0, 1_000_000, 0.95); math.Abs(got*1e6-3) > 0.01 {
		t.Errorf("UpperBound(0, 1e6) = %g, want about 3e-6", got)
	}
}
