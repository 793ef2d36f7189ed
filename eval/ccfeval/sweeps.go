package ccfeval

import (
	"fmt"
	"io"
	"time"

	"github.com/flowmon/flowmon/filters/ccf"
)

// fingerprintSweep is Fig. 5(d): CCF synchronization accuracy as the
// fingerprint grows, with the false-positive bound (2b+s)/(2^f-1) beside
// it.
func fingerprintSweep(cfg Config, w *Workload, out io.Writer) error {
	fmt.Fprintf(out, "### CCF accuracy against fingerprint length (Section 6.3, Fig. 5(d); paper: 0.945 to 0.99999 for f = 7..17)\n\n")
	fmt.Fprintln(out, "| f | bpe | lookup FP bound (2b+s)/(2^f-1) | measured FP rate (absent elements of the other host) | query acc | decode acc | B \\ A counted by decode (true) |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|")
	only := 0
	for _, k := range w.KeysB {
		if w.A[k] == 0 {
			only++
		}
	}
	for f := 4; f <= 18; f += 2 {
		o := ccfOptions(cfg.N, 16)
		o.FingerprintBits = f
		fa, _, err := buildCCF(o, w.KeysA, w.A)
		if err != nil {
			return err
		}
		fb, _, _ := buildCCF(o, w.KeysB, w.B)
		fp, absent := 0, 0
		for _, k := range w.KeysA {
			if w.B[k] == 0 {
				absent++
				if fb.Count(k) != 0 {
					fp++
				}
			}
		}
		qa, _ := w.accuracy(
			func(k, m uint64) (ccf.Class, uint64) { return ccf.Query(fb, k, m) },
			func(k, m uint64) (ccf.Class, uint64) { return ccf.Query(fa, k, m) })
		da, err := ccf.Decode(fa, fb)
		if err != nil {
			return err
		}
		db, _ := ccf.Decode(fb, fa)
		dacc, _ := w.accuracy(
			func(k, _ uint64) (ccf.Class, uint64) { return da.Classify(k) },
			func(k, _ uint64) (ccf.Class, uint64) { return db.Classify(k) })
		st := fa.Stats()
		fmt.Fprintf(out, "| %d | %.1f | %.5f | %.5f | %.5f | %.5f | %d (%d) |\n", f, float64(st.Bits)/float64(cfg.N),
			fa.FalsePositiveBound(), float64(fp)/float64(absent), qa, dacc, da.OnlyThere, only)
	}
	fmt.Fprintln(out)
	return nil
}

// timeSweep is Fig. 4(c) and 4(d): time per element of insertion and of
// identifying the differences as the multisets grow, at 32 bits per
// element.
func timeSweep(cfg Config, out io.Writer) error {
	fmt.Fprintf(out, "### Time per element against multiset size at 32 bpe (Section 6.2, Fig. 4(c) and 4(d))\n\n")
	fmt.Fprintln(out, "| distinct elements per host | CCF insert ns | CBF insert ns | CCF query ns | CCF decode ns | CBF query ns |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|")
	for _, n := range []int{16000, 64000, 256000, 1024000} {
		w := NewWorkload(n, cfg.OnlyFrac, cfg.DiffFrac, cfg.Seed)
		r, err := runRow(w, n, 32)
		if err != nil {
			return err
		}
		per := func(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(2*n)) }
		fmt.Fprintf(out, "| %d | %s | %s | %s | %s | %s |\n", n, per(r.CCFInsert), per(r.CBFInsert),
			per(r.QueryTime), per(r.DecodeTime), per(r.CBFTime))
	}
	fmt.Fprintln(out)
	return nil
}
