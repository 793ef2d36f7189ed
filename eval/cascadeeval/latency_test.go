package cascadeeval

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestLatencies: every duration falls in the bucket whose bounds hold
// it, and quantiles are within 1/16 above the exact ones.
func TestLatencies(t *testing.T) {
	for ns := range uint64(1 << 16) {
		i := bucket(ns)
		if d := time.Duration(ns); d > upper(i) || i > 0 && d <= upper(i-1) {
			t.Fatalf("%d ns in bucket %d of (%d, %d]", ns, i, upper(i-1), upper(i))
		}
	}
	var l Latencies
	r := rand.New(rand.NewPCG(1, 1))
	var all []time.Duration
	for range 100_000 {
		d := time.Duration(r.ExpFloat64() * 300) // ns, a long tail
		if r.IntN(1000) == 0 {
			d = time.Duration(r.Int64N(int64(2 * time.Second)))
		}
		l.Add(d)
		all = append(all, d)
	}
	slices.Sort(all)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact, got := all[int(q*float64(len(all)))], l.Quantile(q)
		if got < exact || float64(got) > float64(exact)*(1+1.0/16)+1 {
			t.Errorf("quantile %g: %v, exact %v", q, got, exact)
		}
	}
	if l.Quantile(1) != all[len(all)-1] || l.Max != all[len(all)-1] {
		t.Errorf("max %v, quantile 1 %v, exact %v", l.Max, l.Quantile(1), all[len(all)-1])
	}
}
