package kbfeval

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/flowmon/flowmon/internal/hashmix"
	"github.com/flowmon/flowmon/kbf"
)

// Config sets up the Section V experiment.
type Config struct {
	N       int       // keys inserted (the paper: 10 million)
	Values  int       // distinct values (the paper: 3000)
	FPRates []float64 // p values (the paper: 1e-3 .. 1e-6)
	// RandomKeys draws uniform 64-bit keys instead of hashing byte strings
	// whose lengths follow the paper's GEV key-size distribution.
	RandomKeys bool
	Seed       uint64
	Batches    int // delete and update batches (the paper: 10)
}

// DefaultConfig is the paper's setup at 1 million keys.
func DefaultConfig() Config {
	return Config{N: 1_000_000, Values: 3000, FPRates: []float64{1e-3, 1e-4, 1e-5, 1e-6}, Seed: 1, Batches: 10}
}

// gevKeyLen draws a key size in bytes from the Generalized Extreme Value
// distribution that Atikoglu et al. fitted to Facebook's general-purpose
// Memcached pool (mu 30.7984, sigma 8.20449, k 0.078688), as Section V-B.
func gevKeyLen(r *rand.Rand) int {
	const mu, sigma, xi = 30.7984, 8.20449, 0.078688
	u := r.Float64()
	for u == 0 {
		u = r.Float64()
	}
	x := mu + sigma*(math.Pow(-math.Log(u), -xi)-1)/xi
	return min(max(int(math.Round(x)), 1), 250)
}

// evalKeys returns 2n distinct 64-bit key hashes: the first n are inserted,
// the rest never are.
func evalKeys(c Config) []uint64 {
	r := rand.New(rand.NewPCG(c.Seed, 0x6b4246))
	keys := make([]uint64, 0, 2*c.N)
	seen := make(map[uint64]struct{}, 2*c.N)
	buf := make([]byte, 256)
	for len(keys) < 2*c.N {
		var k uint64
		if c.RandomKeys {
			k = r.Uint64()
		} else {
			b := buf[:gevKeyLen(r)]
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			k = xxh3.Hash(b)
		}
		if _, dup := seen[k]; dup {
			continue
		}
		seen[k] = struct{}{}
		keys = append(keys, k)
	}
	return keys
}

// Row is one configuration's measurements.
type Row struct {
	Encoder        kbf.EncoderKind
	Layout         kbf.LayoutKind
	Lines          int // cache lines per key (Blocked)
	FPRate         float64
	Size           float64 // multiple of the m of Section IV
	M, K, CodeBits int
	Rho            float64
	BytesPerKey    float64
	FalseNeg       float64 // stored keys answered Absent or Unknown
	Unknown        float64 // of which Unknown
	Incorrect      float64 // stored keys answered with a wrong value
	FalsePos       float64 // never-inserted keys answered Found
	DeleteFP       []float64
	UpdateFN       []float64
	// The same with the paper's decoding rules (QueryPaper).
	PaperFN, PaperIncorrect, PaperFP float64
	PaperDeleteFP, PaperUpdateFN     []float64
	Saturated                        uint64
	Elapsed                          time.Duration
	NsInsert, NsQuery                float64
}

// evalShape is one (encoder, layout, size) column group.
type evalShape struct {
	enc   kbf.EncoderKind
	lay   kbf.LayoutKind
	size  float64
	lines int
}

func evalShapes() []evalShape {
	var s []evalShape
	for _, enc := range []kbf.EncoderKind{kbf.Greedy, kbf.Sidon} {
		s = append(s, evalShape{enc, kbf.Standard, 1, 0}, evalShape{enc, kbf.Standard, 0.5, 0},
			evalShape{enc, kbf.Blocked, 1, 0}, evalShape{enc, kbf.Blocked, 0.5, 0})
	}
	// what memory two lines per key need for the standard layout's error
	// rates: the same, 25% and 50% more cells.
	return append(s, evalShape{kbf.Sidon, kbf.Blocked, 1, 2}, evalShape{kbf.Sidon, kbf.Blocked, 1.25, 2},
		evalShape{kbf.Sidon, kbf.Blocked, 1.5, 2})
}

// Run measures one configuration: insert N keys and query them (false
// negatives, incorrect outputs) and N others (false positives); delete the
// keys in batches and after each query the keys of that batch (false
// positives); on a fresh filter update the keys in batches and after each
// query the keys of that batch (false negatives: null or wrong value).
func Run(c Config, keys []uint64, vals []uint32, o kbf.Options) (Row, error) {
	start := time.Now()
	n := c.N
	f, err := kbf.New(o)
	if err != nil {
		return Row{}, err
	}
	row := Row{Encoder: o.Encoder, Layout: o.Layout, Lines: f.BlockLines(), FPRate: o.FPRate, Size: f.Options().SizeFactor,
		M: f.Cells(), K: f.K(), CodeBits: f.CodeBits(), Rho: kbf.Rho(n, f.K(), f.Cells()),
		BytesPerKey: float64(f.MemoryBytes()) / float64(n)}
	t := time.Now()
	for i := 0; i < n; i++ {
		if err := f.Insert(keys[i], vals[i]); err != nil {
			return row, err
		}
	}
	row.NsInsert = float64(time.Since(t).Nanoseconds()) / float64(n)
	var fn, unk, wrong, fp int
	t = time.Now()
	for i := 0; i < n; i++ {
		v, r := f.Query(keys[i])
		switch {
		case r == kbf.Unknown:
			unk++
			fn++
		case r == kbf.Absent:
			fn++
		case v != vals[i]:
			wrong++
		}
	}
	row.NsQuery = float64(time.Since(t).Nanoseconds()) / float64(n)
	for i := n; i < 2*n; i++ {
		if _, r := f.Query(keys[i]); r == kbf.Found {
			fp++
		}
	}
	var pfn, pwrong, pfp int
	for i := 0; i < n; i++ {
		v, r := f.QueryPaper(keys[i])
		if r != kbf.Found {
			pfn++
		} else if v != vals[i] {
			pwrong++
		}
		if _, r := f.QueryPaper(keys[n+i]); r == kbf.Found {
			pfp++
		}
	}
	row.PaperFN, row.PaperIncorrect, row.PaperFP = float64(pfn)/float64(n), float64(pwrong)/float64(n), float64(pfp)/float64(n)
	row.FalseNeg, row.Unknown = float64(fn)/float64(n), float64(unk)/float64(n)
	row.Incorrect, row.FalsePos = float64(wrong)/float64(n), float64(fp)/float64(n)
	row.Saturated = f.Stats().Saturated
	batch := n / c.Batches
	for b := 0; b < c.Batches; b++ {
		for i := b * batch; i < (b+1)*batch; i++ {
			if err := f.Delete(keys[i], vals[i]); err != nil {
				return row, fmt.Errorf("delete batch %d: %w", b, err)
			}
		}
		fp, pfp := 0, 0
		for i := b * batch; i < (b+1)*batch; i++ {
			if _, r := f.Query(keys[i]); r == kbf.Found {
				fp++
			}
			if _, r := f.QueryPaper(keys[i]); r == kbf.Found {
				pfp++
			}
		}
		row.DeleteFP = append(row.DeleteFP, float64(fp)/float64(batch))
		row.PaperDeleteFP = append(row.PaperDeleteFP, float64(pfp)/float64(batch))
	}
	f, err = kbf.New(o)
	if err != nil {
		return row, err
	}
	for i := 0; i < n; i++ {
		_ = f.Insert(keys[i], vals[i]) // the same values went into the first filter without error
	}
	cur := make([]uint32, n)
	copy(cur, vals[:n])
	nv := uint32(c.Values)
	for b := 0; b < c.Batches; b++ {
		for i := b * batch; i < (b+1)*batch; i++ {
			next := (cur[i] + 1 + uint32(hashmix.Mix(keys[i]))%(nv-1)) % nv
			if nv == 1 {
				next = cur[i]
			}
			if err := f.Update(keys[i], cur[i], next); err != nil {
				return row, fmt.Errorf("update batch %d: %w", b, err)
			}
			cur[i] = next
		}
		bad, pbad := 0, 0
		for i := b * batch; i < (b+1)*batch; i++ {
			if v, r := f.Query(keys[i]); r != kbf.Found || v != cur[i] {
				bad++
			}
			if v, r := f.QueryPaper(keys[i]); r != kbf.Found || v != cur[i] {
				pbad++
			}
		}
		row.UpdateFN = append(row.UpdateFN, float64(bad)/float64(batch))
		row.PaperUpdateFN = append(row.PaperUpdateFN, float64(pbad)/float64(batch))
	}
	row.Elapsed = time.Since(start)
	return row, nil
}

// Section5 runs the experiment for both encoders, both layouts, sizes m and
// m/2 (and blocked at 1.25 m) and every p, and writes the markdown report
// to w. progress, if not nil, gets a line per configuration.
func Section5(w io.Writer, c Config, progress io.Writer) error {
	if c.N < c.Batches || c.Batches < 1 || c.Values < 2 {
		return fmt.Errorf("%w: eval needs n >= batches >= 1 and values >= 2", kbf.ErrInvalidOptions)
	}
	keys := evalKeys(c)
	r := rand.New(rand.NewPCG(c.Seed, 0x76616c))
	vals := make([]uint32, c.N)
	for i := range vals {
		vals[i] = uint32(r.IntN(c.Values))
	}
	var rows []Row
	for _, s := range evalShapes() {
		for _, p := range c.FPRates {
			o := kbf.Options{Capacity: c.N, FPRate: p, Values: c.Values, Encoder: s.enc, Layout: s.lay, SizeFactor: s.size, BlockLines: s.lines, Seed: c.Seed}
			row, err := Run(c, keys, vals, o)
			if err != nil {
				return fmt.Errorf("eval %v/%v p=%g size %g: %w", s.enc, s.lay, p, s.size, err)
			}
			rows = append(rows, row)
			if progress != nil {
				fmt.Fprintf(progress, "%v/%s p=%g size=%g: fn=%.3g fp=%.3g wrong=%.3g (paper rules: fn=%.3g fp=%.3g wrong=%.3g) in %v\n",
					s.enc, row.layoutName(), p, s.size, row.FalseNeg, row.FalsePos, row.Incorrect,
					row.PaperFN, row.PaperFP, row.PaperIncorrect, row.Elapsed.Round(time.Millisecond))
			}
		}
	}
	writeEval(w, c, rows)
	return nil
}

func (r Row) layoutName() string {
	if r.Layout == kbf.Blocked {
		return fmt.Sprintf("blocked/%d", r.Lines)
	}
	return r.Layout.String()
}

func sizeName(s float64) string {
	switch s {
	case 1:
		return "m"
	case 0.5:
		return "m/2"
	}
	return fmt.Sprintf("%gm", s)
}

func pct(x float64) string {
	if x == 0 {
		return "0"
	}
	return fmt.Sprintf("%.2e", x)
}

func writeEval(w io.Writer, c Config, rows []Row) {
	keys := "hashes of random byte strings with the paper's GEV key sizes (mu 30.80, sigma 8.20, k 0.0787)"
	if c.RandomKeys {
		keys = "uniform random 64-bit keys"
	}
	fmt.Fprintf(w, "# kBF: Section V reproduced\n\n")
	fmt.Fprintf(w, "n = %d keys (%s), %d distinct values drawn uniformly, %d more keys never inserted for the false-positive rate, seed %d. ",
		c.N, keys, c.Values, c.N, c.Seed)
	fmt.Fprintf(w, "32-bit cells with 3-bit counters. m = -n ln p / (ln 2)^2 and k = round(-ln p / ln 2) (Section IV); "+
		"size m/2 is the paper's overloaded filter. "+
		"blocked/L puts a key's k cells in L 64-byte lines (L = max(3, ceil(2k/16)) by default), a random subset of each line; blocked/2 at m, 1.25m and 1.5m shows "+
		"what two lines per key would need to match the standard layout's error rates.\n\n")
	fmt.Fprintf(w, "Rates are fractions. FN: stored keys answered absent or \"don't know\" (the unknown column is the don't-know part); "+
		"incorrect: stored keys answered with a wrong value; FP: never-inserted keys answered with a value. "+
		"The paper columns decode the same filters with the paper's rules as printed (QueryPaper: a singleton cell's code is returned unchecked); "+
		"the other columns use Query, which checks every candidate against all k cells. ns/insert and ns/query are wall-clock means of this run on a shared machine, indicative only (benchmarks: see the report).\n\n")
	fmt.Fprintf(w, "## Errors and memory\n\n")
	fmt.Fprintf(w, "| encoder | layout | p | size | k | code bits | rho | bytes/key | FN | unknown | incorrect | FP | paper FN | paper incorrect | paper FP | saturated cells | ns/insert | ns/query |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(w, "| %v | %s | %g | %s | %d | %d | %.2f | %.2f | %s | %s | %s | %s | %s | %s | %s | %d | %.0f | %.0f |\n",
			r.Encoder, r.layoutName(), r.FPRate, sizeName(r.Size), r.K, r.CodeBits, r.Rho, r.BytesPerKey,
			pct(r.FalseNeg), pct(r.Unknown), pct(r.Incorrect), pct(r.FalsePos),
			pct(r.PaperFN), pct(r.PaperIncorrect), pct(r.PaperFP), r.Saturated, r.NsInsert, r.NsQuery)
	}
	batchTable := func(title, what string, get func(Row) []float64) {
		fmt.Fprintf(w, "\n## %s\n\n%s\n\n| encoder | layout | p | size |", title, what)
		for b := 1; b <= c.Batches; b++ {
			fmt.Fprintf(w, " %d |", b)
		}
		fmt.Fprintf(w, "\n|---|---|---|---|%s\n", strings.Repeat("---|", c.Batches))
		for _, r := range rows {
			fmt.Fprintf(w, "| %v | %s | %g | %s |", r.Encoder, r.layoutName(), r.FPRate, sizeName(r.Size))
			for _, x := range get(r) {
				fmt.Fprintf(w, " %s |", pct(x))
			}
			fmt.Fprintln(w)
		}
	}
	batchTable("False positives after each batch of deletes (paper Fig. 9, 10)",
		fmt.Sprintf("The stored keys are deleted in %d batches of %d; after each batch the keys of that batch are queried, "+
			"and the column is the share answered with a value.", c.Batches, c.N/c.Batches),
		func(r Row) []float64 { return r.DeleteFP })
	batchTable("The same with the paper's decoding rules",
		"QueryPaper on the same filters: rule 1 returns a singleton cell's code without checking the other cells.",
		func(r Row) []float64 { return r.PaperDeleteFP })
	batchTable("False negatives after each batch of updates (paper Fig. 11, 12)",
		fmt.Sprintf("On a fresh filter the stored keys get a new value in %d batches of %d; after each batch the keys of that batch "+
			"are queried, and the column is the share answered absent, don't-know or with a wrong value.", c.Batches, c.N/c.Batches),
		func(r Row) []float64 { return r.UpdateFN })
	batchTable("The same with the paper's decoding rules ",
		"QueryPaper on the same filters.",
		func(r Row) []float64 { return r.PaperUpdateFN })
}
