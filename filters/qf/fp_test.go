package qf

import (
	"math"
	"math/rand/v2"
	"testing"
)

// measureFP fills a filter of 2^q slots with r-bit remainders to load
// alpha with random hashes and returns the share of probes (hashes never
// inserted) it reports present, and the paper's 1 - e^(-α/2^r).
func measureFP(q, r uint, alpha float64, probes int, seed uint64) (measured, formula float64, err error) {
	f, err := New(Options{QuotientBits: q, RemainderBits: r})
	if err != nil {
		return 0, 0, err
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	n := uint64(alpha * float64(f.Slots()))
	for range n {
		if err := f.Insert(rng.Uint64() | 1); err != nil {
			return 0, 0, err
		}
	}
	hits := 0
	for range probes {
		if f.Contains(rng.Uint64() &^ 1) {
			hits++
		}
	}
	return float64(hits) / float64(probes), f.EstimatedFPRate(), nil
}

// TestFPRateMatchesPaper checks the measured false-positive rate against
// the paper's analysis, 1 - e^(-α/2^r), at several loads and remainder
// lengths: within 5 standard deviations of a binomial count.
func TestFPRateMatchesPaper(t *testing.T) {
	const probes = 200_000
	for _, r := range []uint{3, 5, 8} {
		for _, alpha := range []float64{0.25, 0.5, 0.75, 0.9} {
			got, want, err := measureFP(14, r, alpha, probes, uint64(r)*100+uint64(alpha*100))
			if err != nil {
				t.Fatal(err)
			}
			sd := math.Sqrt(want * (1 - want) / probes)
			if math.Abs(got-want) > 5*sd {
				t.Errorf("r=%d α=%.2f: measured %.5f, formula %.5f (sd %.5f)", r, alpha, got, want, sd)
			}
			if want > alpha/math.Ldexp(1, int(r)) {
				t.Errorf("r=%d α=%.2f: 1-e^(-α/2^r) = %g above α/2^r", r, alpha, want)
			}
		}
	}
}

// TestOptionsMeetFPRate: a filter sized from Capacity and FPRate has at
// most that rate at Capacity.
func TestOptionsMeetFPRate(t *testing.T) {
	for _, tc := range []struct {
		n  uint64
		fp float64
	}{{1000, 0.01}, {100_000, 0.001}, {5, 0.5}, {1 << 20, 1e-6}} {
		o := Options{Capacity: tc.n, FPRate: tc.fp}
		q, r, err := o.Shape()
		if err != nil {
			t.Fatal(err)
		}
		alpha := float64(tc.n) / math.Ldexp(1, int(q))
		if alpha > DefaultMaxLoad || FPRate(alpha, r) > tc.fp || FPRate(DefaultMaxLoad, r-1) <= tc.fp && r > 1 {
			t.Errorf("%+v: q=%d r=%d load %.2f fp %g", o, q, r, alpha, FPRate(alpha, r))
		}
	}
	for _, o := range []Options{{}, {Capacity: 10}, {Capacity: 10, FPRate: 1}, {QuotientBits: 3},
		{QuotientBits: 41, RemainderBits: 2}, {QuotientBits: 10, RemainderBits: 62}, {QuotientBits: 30, RemainderBits: 35}} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
