// Package evalstat holds the statistics the evaluations (fbfeval,
// qfeval, scbfeval) share when they report a measured rate.
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
