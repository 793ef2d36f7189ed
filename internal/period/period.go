// Package period numbers the periods of fixed length that packet time is
// cut into: the rules' windows, the fingerprint table's ticks. A packet
// time may lie before the epoch (a trace's clock, a test's), so the
// division rounds down, not toward zero, and a period never straddles 0.
package period

// Of is the index of the period of length n (ns, above 0) holding t (ns):
// period i is [i·n, (i+1)·n), so -1 holds [-n, 0) and 0 holds [0, n).
func Of(t, n int64) int64 {
	i := t / n
	if t%n < 0 {
		i--
	}
	return i
}
