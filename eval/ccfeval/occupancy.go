package ccfeval

import (
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/flowmon/flowmon/filters/ccf"
)

// occupancy measures the load a CCF reaches (Section 6.3's table): random
// distinct keys are inserted, with the kick bound equal to the bucket
// count as in the paper, until the first victim lands in the stash (the
// paper's "FULL") and then until an insertion is refused with the stash
// full.
func occupancy(cfg Config, out io.Writer) error {
	fmt.Fprintf(out, "### Occupancy reached (Section 6.3; paper: 0.965 to 0.970)\n\n")
	fmt.Fprintf(out, "b = 4, f = %d, kick bound = number of buckets, stash of 4 per level.\n\n", cfg.FPBits)
	fmt.Fprintln(out, "| buckets | slots | load at first failed kick chain (paper's FULL) | load when the stash is full too |")
	fmt.Fprintln(out, "|---|---|---|---|")
	r := rand.New(rand.NewPCG(cfg.Seed, 0x6f6363))
	for e := cfg.OccFrom; e <= cfg.OccTo; e++ {
		m := uint64(1) << e
		f, err := ccf.New(ccf.Options{Buckets: m, FingerprintBits: cfg.FPBits, CounterBits: 8, MaxKicks: int(m), StashSize: 4})
		if err != nil {
			return err
		}
		first := -1.0
		for {
			_, err := f.Insert(r.Uint64(), 1)
			st := f.Stats()
			if first < 0 && st.Stashed > 0 {
				first = float64(st.Distinct-1) / float64(st.Slots)
			}
			if err != nil {
				break
			}
		}
		st := f.Stats()
		fmt.Fprintf(out, "| %d | %d | %.5f | %.5f |\n", m, st.Slots, first, float64(st.Distinct)/float64(st.Slots))
	}
	fmt.Fprintln(out)
	return nil
}
