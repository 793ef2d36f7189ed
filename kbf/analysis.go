package kbf

import "math"

// The analysis of Section IV as functions.

// CellsFor is the number of cells m = -n ln p / (ln 2)^2 that keeps the
// Bloom false-positive rate at p for n keys (Section IV).
func CellsFor(n int, p float64) float64 {
	return -float64(n) * math.Log(p) / (math.Ln2 * math.Ln2)
}

// OptimalK is the number of cells per key at the p-capacity,
// k = -ln p / ln 2, rounded to the nearest integer (Section IV).
func OptimalK(p float64) int {
	return int(math.Round(-math.Log(p) / math.Ln2))
}

// PCapacity is the p-capacity of a filter of m cells: the largest number of
// keys it holds without its false-positive rate exceeding p,
// -m (ln 2)^2 / ln p (Section IV, Definition).
func PCapacity(m int, p float64) int {
	return int(-float64(m) * math.Ln2 * math.Ln2 / math.Log(p))
}

// Rho is the capacity coefficient of Section IV: nk/m = rho ln 2.
func Rho(n, k, m int) float64 {
	return float64(n) * float64(k) / (float64(m) * math.Ln2)
}

// CellLoadProb is the limit probability that a cell holds exactly j
// encodings, (rho ln 2)^j / j! * 2^-rho (the urn model of Section IV).
func CellLoadProb(j int, rho float64) float64 {
	l := rho * math.Ln2
	lg, _ := math.Lgamma(float64(j + 1))
	return math.Exp(float64(j)*math.Log(l)-lg) * math.Exp2(-rho)
}

// OverloadProb is P_n(rho), the limit probability that a cell holds three or
// more encodings, in the paper's closed form
// 2^(-rho-1) (-rho^2 ln(2)^2 + 2^(rho+1) - rho ln 4 - 2). P_n(1) = 0.0333.
func OverloadProb(rho float64) float64 {
	l2 := math.Ln2
	return math.Exp2(-rho-1) * (-rho*rho*l2*l2 + math.Exp2(rho+1) - rho*math.Log(4) - 2)
}

// GlobalDecodability is the paper's estimate of the probability that a key
// decodes, 1 - [P_n^k + k P_n^(k-1) P(c=2)] (Section IV, Fig. 5).
func GlobalDecodability(rho float64, k int) float64 {
	pn := OverloadProb(rho)
	return 1 - (math.Pow(pn, float64(k)) + float64(k)*math.Pow(pn, float64(k-1))*CellLoadProb(2, rho))
}
