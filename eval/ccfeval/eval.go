package ccfeval

import (
	"fmt"
	"io"
	"maps"
	"math"
	"time"

	"github.com/flowmon/flowmon/filters/cbf"
	"github.com/flowmon/flowmon/filters/ccf"
)

// Config sets the experiment; zero fields take the paper's values.
type Config struct {
	N        int     // distinct elements per root set (64,000)
	OnlyFrac float64 // share of each root set on one host only (0.1)
	DiffFrac float64 // share of shared elements with another multiplicity (0.1)
	BPE      []int   // bits per element (16, 24, ..., 80)
	Trials   int     // workloads averaged per row (1)
	Seed     uint64
	// Occupancy: level-0 bucket counts 2^OccFrom .. 2^OccTo (10..16).
	OccFrom, OccTo int
	FPBits         int  // fingerprint bits in the occupancy runs (12)
	Quick          bool // skip the time sweep (up to 1M elements per host)
}

func (c Config) withDefaults() Config {
	if c.N == 0 {
		c.N = 64000
	}
	if c.OnlyFrac == 0 {
		c.OnlyFrac = 0.1
	}
	if c.DiffFrac == 0 {
		c.DiffFrac = 0.1
	}
	if len(c.BPE) == 0 {
		c.BPE = []int{16, 24, 32, 40, 48, 56, 64, 72, 80}
	}
	if c.Trials == 0 {
		c.Trials = 1
	}
	if c.OccFrom == 0 {
		c.OccFrom, c.OccTo = 10, 16
	}
	if c.FPBits == 0 {
		c.FPBits = 12
	}
	return c
}

const (
	ccfCounter = 8
	ccfLoad    = 0.95
	cbfCounter = 8
)

// classifier classifies one element of a host's root set.
type classifier func(key, local uint64) (ccf.Class, uint64)

// identify classifies every element of keys, timed.
func identify(keys []uint64, ms map[uint64]uint64, cl classifier) ([]ccf.Class, []uint64, time.Duration) {
	cs, qs := make([]ccf.Class, len(keys)), make([]uint64, len(keys))
	start := time.Now()
	for i, k := range keys {
		cs[i], qs[i] = cl(k, ms[k])
	}
	return cs, qs, time.Since(start)
}

// Accuracy applies both hosts' classifications (Section 4.1) and returns
// the fraction of the union's elements with equal multiplicities after.
func (w *Workload) accuracy(ca, cb classifier) (float64, time.Duration) {
	a2, b2 := maps.Clone(w.A), maps.Clone(w.B)
	act := func(keys []uint64, self, self2, other2 map[uint64]uint64, cl classifier) time.Duration {
		cs, qs, d := identify(keys, self, cl)
		for i, k := range keys {
			switch cs[i] {
			case ccf.OnlyHere:
				other2[k] = max(other2[k], self[k])
			case ccf.ThereMore:
				self2[k] = qs[i]
			}
		}
		return d
	}
	d := act(w.KeysA, w.A, a2, b2, ca) + act(w.KeysB, w.B, b2, a2, cb)
	agree := 0
	for _, k := range w.Union {
		if a2[k] == b2[k] {
			agree++
		}
	}
	return float64(agree) / float64(len(w.Union)), d
}

// Row is one line of the synchronization table.
type Row struct {
	BPE                          int
	F                            int
	CCFBPE, CCFLoad              float64
	CCFInsert                    time.Duration
	QueryAcc, DecodeAcc          float64
	QueryTime, DecodeTime        time.Duration
	CBFCells                     uint64
	CBFHashes                    int
	CBFBPE                       float64
	CBFInsert                    time.Duration
	CBFAcc                       float64
	CBFTime                      time.Duration
	CCFFull, CBFSat, CCFSaturate uint64
}

func ccfOptions(n, bpe int) ccf.Options {
	buckets := uint64(math.Ceil(float64(n) / (4 * ccfLoad)))
	w := int(float64(bpe) * float64(n) / float64(buckets*4))
	f := min(max(w-ccfCounter, ccf.MinFingerprintBits), 64-ccfCounter)
	return ccf.Options{Buckets: buckets, FingerprintBits: f, CounterBits: ccfCounter, MaxKicks: 500, Seed: 1}
}

func buildCCF(o ccf.Options, keys []uint64, ms map[uint64]uint64) (*ccf.Filter, uint64, error) {
	f, err := ccf.New(o)
	if err != nil {
		return nil, 0, err
	}
	var full uint64
	for _, k := range keys {
		if _, err := f.Insert(k, ms[k]); err != nil {
			full++
		}
	}
	return f, full, nil
}

func buildCBF(o cbf.Options, keys []uint64, ms map[uint64]uint64) (*cbf.Filter, error) {
	f, err := cbf.New(o)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		f.Add(k, ms[k])
	}
	return f, nil
}

// runRow measures one bits-per-element setting on workload w.
func runRow(w *Workload, n, bpe int) (Row, error) {
	r := Row{BPE: bpe}
	o := ccfOptions(n, bpe)
	r.F = o.FingerprintBits
	start := time.Now()
	fa, fullA, err := buildCCF(o, w.KeysA, w.A)
	if err != nil {
		return r, err
	}
	fb, fullB, _ := buildCCF(o, w.KeysB, w.B)
	r.CCFInsert = time.Since(start)
	r.CCFFull = fullA + fullB
	st := fa.Stats()
	r.CCFBPE, r.CCFLoad = float64(st.Bits)/float64(n), st.Load
	r.CCFSaturate = st.Saturations + fb.Stats().Saturations
	r.QueryAcc, r.QueryTime = w.accuracy(
		func(k, m uint64) (ccf.Class, uint64) { return ccf.Query(fb, k, m) },
		func(k, m uint64) (ccf.Class, uint64) { return ccf.Query(fa, k, m) })
	start = time.Now()
	da, err := ccf.Decode(fa, fb)
	if err != nil {
		return r, err
	}
	db, _ := ccf.Decode(fb, fa)
	elim := time.Since(start)
	r.DecodeAcc, r.DecodeTime = w.accuracy(
		func(k, _ uint64) (ccf.Class, uint64) { return da.Classify(k) },
		func(k, _ uint64) (ccf.Class, uint64) { return db.Classify(k) })
	r.DecodeTime += elim

	cells := uint64(bpe * n / cbfCounter)
	co := cbf.Options{Cells: cells, Hashes: max(1, int(math.Round(float64(cells)/float64(n)*math.Ln2))), CounterBits: cbfCounter, Seed: 1}
	r.CBFCells, r.CBFHashes = cells, co.Hashes
	start = time.Now()
	ca, err := buildCBF(co, w.KeysA, w.A)
	if err != nil {
		return r, err
	}
	cb, _ := buildCBF(co, w.KeysB, w.B)
	r.CBFInsert = time.Since(start)
	r.CBFBPE = float64(ca.Stats().Bits) / float64(n)
	r.CBFSat = ca.Stats().Saturations + cb.Stats().Saturations
	query := func(g *cbf.Filter) classifier {
		return func(k, m uint64) (ccf.Class, uint64) { q := g.Count(k); return ccf.Classify(m, q), q }
	}
	r.CBFAcc, r.CBFTime = w.accuracy(query(cb), query(ca))
	return r, nil
}

// Run prints the synchronization and occupancy tables as markdown.
func Run(cfg Config, out io.Writer) error {
	cfg = cfg.withDefaults()
	rows := make([]Row, len(cfg.BPE))
	var cardA, cardB uint64
	for t := range cfg.Trials {
		w := NewWorkload(cfg.N, cfg.OnlyFrac, cfg.DiffFrac, cfg.Seed+uint64(t))
		cardA, cardB = w.CardA, w.CardB
		for i, bpe := range cfg.BPE {
			r, err := runRow(w, cfg.N, bpe)
			if err != nil {
				return fmt.Errorf("bpe %d: %w", bpe, err)
			}
			rows[i] = addRow(rows[i], r, t == 0)
		}
	}
	fmt.Fprintf(out, "### Multiset synchronization: accuracy and time against bits per element (Section 6.2, Fig. 4)\n\n")
	fmt.Fprintf(out, "N = %d distinct elements per host, cardinality %d (A) / %d (B); %.0f%% of each root set on one host only, %.0f%% of the shared elements with different multiplicities; %d trial(s) averaged. Accuracy before synchronization: %.4f. Times are totals for both hosts (%d elements).\n\n",
		cfg.N, cardA, cardB, 100*cfg.OnlyFrac, 100*cfg.DiffFrac, cfg.Trials,
		NewWorkload(cfg.N, cfg.OnlyFrac, cfg.DiffFrac, cfg.Seed).initialAccuracy(), 2*cfg.N)
	fmt.Fprintln(out, "| bpe | CCF f | CCF bpe | CCF load | CCF query acc | CCF decode acc | CBF cells/elem, k | CBF bpe | CBF acc | CCF insert ms | CBF insert ms | CCF query ms | CCF decode ms | CBF query ms | CCF full / sat | CBF sat |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	tr := float64(cfg.Trials)
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/1e6/tr) }
	for _, r := range rows {
		fmt.Fprintf(out, "| %d | %d | %.1f | %.3f | %.5f | %.5f | %.0f, %d | %.1f | %.5f | %s | %s | %s | %s | %s | %d / %d | %d |\n",
			r.BPE, r.F, r.CCFBPE, r.CCFLoad/tr, r.QueryAcc/tr, r.DecodeAcc/tr,
			float64(r.CBFCells)/float64(cfg.N), r.CBFHashes, r.CBFBPE, r.CBFAcc/tr,
			ms(r.CCFInsert), ms(r.CBFInsert), ms(r.QueryTime), ms(r.DecodeTime), ms(r.CBFTime),
			r.CCFFull, r.CCFSaturate, r.CBFSat)
	}
	fmt.Fprintln(out)
	if err := fingerprintSweep(cfg, NewWorkload(cfg.N, cfg.OnlyFrac, cfg.DiffFrac, cfg.Seed), out); err != nil {
		return err
	}
	if !cfg.Quick {
		if err := timeSweep(cfg, out); err != nil {
			return err
		}
	}
	return occupancy(cfg, out)
}

func (w *Workload) initialAccuracy() float64 {
	agree := 0
	for _, k := range w.Union {
		if w.A[k] == w.B[k] {
			agree++
		}
	}
	return float64(agree) / float64(len(w.Union))
}

// addRow accumulates b into a (sums; the static columns from the first).
func addRow(a, b Row, first bool) Row {
	if first {
		return b
	}
	a.CCFLoad += b.CCFLoad
	a.QueryAcc += b.QueryAcc
	a.DecodeAcc += b.DecodeAcc
	a.CBFAcc += b.CBFAcc
	a.CCFInsert += b.CCFInsert
	a.CBFInsert += b.CBFInsert
	a.QueryTime += b.QueryTime
	a.DecodeTime += b.DecodeTime
	a.CBFTime += b.CBFTime
	a.CCFFull += b.CCFFull
	a.CCFSaturate += b.CCFSaturate
	a.CBFSat += b.CBFSat
	return a
}
