// Package evalstat holds the statistics shared where a rate is measured
// on a sample: the evaluations (fbfeval, qfeval, scbfeval) and the ACSM's
// shadow in a run's summary.
package evalstat

import "math"

// Wilson is the 95% Wilson score interval of a rate p measured over n
// trials: unlike p ± 1.96σ it stays in [0, 1] and holds for the small
// rates filters are measured at.
func Wilson(p float64, n int) (lo, hi float64) {
	const z = 1.96
	nf := float64(n)
	d := 1 + z*z/nf
	c := (p + z*z/(2*nf)) / d
	h := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / d
	return max(0, c-h), c + h
}

// UpperBound is the one-sided Clopper-Pearson upper bound at confidence
// conf (0.95: 95%) of a rate measured as k events in n trials: the rate
// p at which seeing k or fewer has probability 1-conf. It is exact, so it
// holds for any n, where a normal approximation fails on the few trials
// and rare events that shadow checks see; for k = 0 it is
// 1-(1-conf)^(1/n), about 3/n at 95% (the rule of three). n = 0 tells
// nothing: 1.
func UpperBound(k, n uint64, conf float64) float64 {
	if n == 0 || k >= n {
		return 1
	}
	alpha := 1 - conf
	if k == 0 {
		return -math.Expm1(math.Log(alpha) / float64(n))
	}
	// P(X ≤ k | n, p) = I_{1-p}(n-k, k+1) falls as p grows: bisect.
	a, b := float64(n-k), float64(k+1)
	lo, hi := float64(k)/float64(n), 1.0
	for range 100 {
		mid := (lo + hi) / 2
		if regIncBeta(a, b, 1-mid) > alpha {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), by
// its continued fraction (Numerical Recipes, 6.4), on the side of x where
// it converges fast.
func regIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, 1-x)/b
}

// betaCF evaluates the incomplete beta function's continued fraction by
// the modified Lentz method.
func betaCF(a, b, x float64) float64 {
	const eps = 1e-15
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1/awayFromZero(1-qab*x/qap)
	h := d
	for m := 1.0; m <= 10000; m++ {
		m2 := 2 * m
		// The even step, then the odd one.
		aa := m * (b - m) * x / ((qam + m2) * (a + m2))
		d, c = 1/awayFromZero(1+aa*d), awayFromZero(1+aa/c)
		h *= d * c
		aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
		d, c = 1/awayFromZero(1+aa*d), awayFromZero(1+aa/c)
		del := d * c
		h *= del
		if math.Abs(del-1) < eps {
			break
		}
	}
	return h
}

// awayFromZero keeps Lentz's terms off zero, where they would divide by
// it.
func awayFromZero(v float64) float64 {
	const tiny = 1e-300
	if math.Abs(v) < tiny {
		return tiny
	}
	return v
}
