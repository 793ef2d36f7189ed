package bloom

import (
	"math"
	"testing"
)

// blockedFPRateTerms is BlockedFPRate term by term, the reference its
// recurrences are checked against: every term in log space, with its own
// log-gamma and exponentials.
func blockedFPRateTerms(m uint64, k int, n uint64) float64 {
	if m < BlockBits {
		return 1
	}
	lambda := float64(n) * BlockBits / float64(m)
	if lambda == 0 {
		return 0
	}
	lo, hi := poissonSpan(lambda)
	var s float64
	l1 := math.Log1p(-1.0 / BlockBits)
	for i := lo; i <= hi; i++ {
		lg, _ := math.Lgamma(float64(i) + 1)
		w := math.Exp(float64(i)*math.Log(lambda) - lambda - lg)
		s += w * math.Pow(1-math.Exp(float64(i*k)*l1), float64(k))
	}
	return min(s, 1)
}

// TestBlockedFPRateRecurrence: the recurrences agree with the term-by-term
// sum to 1e-12 relative wherever a filter is sized (at most a thousand
// elements a block, rates far below 1), and to 1e-8 in overloaded blocks,
// where both read nearly 1 and the term-by-term sum's own exponentials of
// arguments near 10^7 are off by about that.
func TestBlockedFPRateRecurrence(t *testing.T) {
	worst := 0.0
	for _, m := range []uint64{BlockBits, 4096, 1 << 16, 1 << 20, 1 << 24} {
		for _, k := range []int{1, 2, 5, 10, 16, 24} {
			for _, n := range []uint64{0, 1, 100, 5000, 50_000, 1_000_000} {
				got, want := BlockedFPRate(m, k, n), blockedFPRateTerms(m, k, n)
				if want == 0 {
					if got != 0 {
						t.Errorf("m %d k %d n %d: %g, want 0", m, k, n, got)
					}
					continue
				}
				rel, tol := math.Abs(got/want-1), 1e-12
				if float64(n)*BlockBits/float64(m) > 1000 {
					tol = 1e-8
				} else {
					worst = max(worst, rel)
				}
				if rel > tol {
					t.Errorf("m %d k %d n %d: %.17g, term by term %.17g", m, k, n, got, want)
				}
			}
		}
	}
	t.Logf("largest relative difference, up to a thousand elements a block: %.3g", worst)
}
