package cascadeeval

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/flowmon/flowmon/filters/cascade"
	"github.com/flowmon/flowmon/internal/hashmix"
)

// Config parameterizes Run.
type Config struct {
	// Dir is where the run's files go (a temporary directory under it,
	// removed at the end); "" is os.TempDir().
	Dir string
	// RAMBytes is each structure's RAM budget: the Cascade Filter's QF0,
	// the Bloom filter's insert buffer.
	RAMBytes uint64
	// Ratio is the Bloom filter's size on disk over RAMBytes: it sets the
	// number of keys (at least 8: the data set is past RAM).
	Ratio float64
	// Sizes are the (RAMBytes, Ratio) pairs Run measures one after the
	// other; Measure uses RAMBytes and Ratio.
	Sizes []Size
	// FPRate is both structures' false-positive rate at the data set's
	// size (the paper's 0.04%).
	FPRate float64
	// BloomSeconds bounds the Bloom filter's insert measurement (its
	// rate is flat: each flush rewrites about the same pages).
	BloomSeconds float64
	// LookupSeconds bounds each lookup measurement; MaxLookups caps it.
	LookupSeconds float64
	MaxLookups    int
	// Cached lets the page cache serve reads (no O_DIRECT, no
	// fadvise): a warm-cache run, for comparison.
	Cached bool
	Seed   uint64
}

// Size is one run's RAM budget and data set.
type Size struct {
	RAMBytes uint64
	Ratio    float64
}

// Defaults of `flowmon eval cascade`: the same 33 million keys with a 4
// MiB and a 1 MiB budget, the data set 16 and 64 times the budget.
var Defaults = Config{Sizes: []Size{{4 << 20, 16}, {1 << 20, 64}}, FPRate: 0.0004, BloomSeconds: 20,
	LookupSeconds: 8, MaxLookups: 200_000, Seed: 1}

// Result holds one run's figures.
type Result struct {
	Cfg Config
	N   uint64 // keys inserted
	// Sync is the Cascade Filter with the paper's merges (inside the
	// insertion that finds QF0 full), whose lookups are measured and
	// compared with the Bloom filter's; BG the same keys inserted with
	// background merges (two QF0s of half the budget).
	Sync, BG        InsertRun
	CFNeg, CFPos    lookups
	BFBits          uint64
	BFHashes        int
	BFBulk          time.Duration // the harness's bulk load (not measured as inserts)
	BFInsert        rate
	BFFlushes       uint64
	BFPagesPerFlush float64
	BFNeg, BFPos    lookups
	IOPS            float64 // random 4 KiB reads per second the disk gives, probed before the Bloom lookups
	CFIOPS          float64 // the same, probed on the cascade's largest level before its lookups
	Wall            time.Duration
}

// InsertRun is one merge mode's insertion of the data set, each
// insertion timed.
type InsertRun struct {
	SyncMerge bool
	Insert    rate
	Latency   Latencies
	// Merges and MergeTime are the insertions that merged (SyncMerge:
	// those that found QF0 full) and their time.
	Merges    int
	MergeTime time.Duration
	// Busy and BusyTime are the insertions TryInsert refused with
	// ErrBusy (background merges: both QF0s full while a merge ran),
	// which Insert then made, waiting for the merge, and their time.
	Busy     uint64
	BusyTime time.Duration
	CF       cascade.Stats // after the insertions (and the last merge)
}

type rate struct {
	N       uint64
	Elapsed time.Duration
}

func (r rate) PerSec() float64 { return float64(r.N) / r.Elapsed.Seconds() }

type lookups struct {
	rate
	Reads     uint64
	Positives uint64
}

func (l lookups) ReadsPer() float64 { return float64(l.Reads) / float64(l.N) }

// key is the i-th element's hash: a bijection of i, so inserted (i < N)
// and absent (i >= N) keys never coincide.
func (r *Result) key(i uint64) uint64 { return hashmix.Mix(i ^ r.Cfg.Seed*hashmix.Golden) }

// Run measures the Cascade Filter and the buffered Bloom filter on one
// data set per size, side by side, and writes the tables.
func Run(w io.Writer, cfg Config) error {
	var rs []*Result
	for _, sz := range cfg.Sizes {
		c := cfg
		c.RAMBytes, c.Ratio = sz.RAMBytes, sz.Ratio
		r, err := Measure(c)
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	return Write(w, cfg, rs)
}

// Measure runs the experiment.
func Measure(cfg Config) (*Result, error) {
	if cfg.Ratio < 1 || cfg.RAMBytes < cascade.MinRAMBytes || !(cfg.FPRate > 0 && cfg.FPRate < 1) {
		return nil, fmt.Errorf("eval cascade: ratio %g, RAM %d, fp rate %g out of range", cfg.Ratio, cfg.RAMBytes, cfg.FPRate)
	}
	start := time.Now()
	bitsPerKey := -math.Log(cfg.FPRate) / (math.Ln2 * math.Ln2)
	r := &Result{Cfg: cfg, N: uint64(cfg.Ratio * float64(cfg.RAMBytes) * 8 / bitsPerKey)}
	tmp, err := os.MkdirTemp(cfg.Dir, "flowmon-eval-cascade-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := r.cascade(filepath.Join(tmp, "cf")); err != nil {
		return nil, err
	}
	if err := r.bloom(filepath.Join(tmp, "bloom")); err != nil {
		return nil, err
	}
	r.Wall = time.Since(start)
	return r, nil
}

// inserts inserts the data set into a new Cascade Filter in dir with
// the merge mode asked for, timing each insertion from the last one's
// return (the key's hash, a few nanoseconds, included), and returns the
// filter open.
func (r *Result) inserts(dir string, syncMerge bool) (*cascade.Filter, InsertRun, error) {
	cfg := r.Cfg
	run := InsertRun{SyncMerge: syncMerge}
	f, err := cascade.Open(dir, cascade.Options{RAMBytes: cfg.RAMBytes, Capacity: r.N, FPRate: cfg.FPRate,
		Uncached: !cfg.Cached, SyncMerge: syncMerge})
	if err != nil {
		return nil, run, err
	}
	cap0 := f.Stats().QF0Capacity
	t0 := time.Now()
	prev := t0
	for i := range r.N {
		k := r.key(i)
		err := f.TryInsert(k)
		busy := errors.Is(err, cascade.ErrBusy)
		if busy {
			err = f.Insert(k)
		}
		if err != nil {
			f.Close()
			return nil, run, err
		}
		now := time.Now()
		d := now.Sub(prev)
		prev = now
		run.Latency.Add(d)
		switch {
		case busy:
			run.Busy++
			run.BusyTime += d
		case syncMerge && i > 0 && i%cap0 == 0: // QF0 was full: this insertion merged first
			run.Merges++
			run.MergeTime += d
		}
	}
	run.Insert = rate{r.N, prev.Sub(t0)}
	if !syncMerge {
		// The last merge, on its goroutine, for the levels' figures
		// (not timed: no insertion waits for it).
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, run, err
		}
	}
	run.CF = f.Stats()
	return f, run, nil
}

// cascade measures the background merges' insertions, then the paper's
// synchronous ones and their lookups.
func (r *Result) cascade(dir string) error {
	cfg := r.Cfg
	f, bg, err := r.inserts(dir+"-bg", false)
	if err != nil {
		return err
	}
	r.BG = bg
	if err := f.Close(); err != nil {
		return err
	}
	os.RemoveAll(dir + "-bg")
	f, r.Sync, err = r.inserts(dir, true)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := r.probeLevels(dir); err != nil {
		return err
	}
	var lookupErr error
	measure := func(l *lookups, key func(j uint64) uint64) {
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(len(r.Sync.CF.Levels))))
		reads0 := f.Stats().PageReads
		t0 := time.Now()
		deadline := t0.Add(time.Duration(cfg.LookupSeconds * float64(time.Second)))
		for l.N < uint64(cfg.MaxLookups) && (l.N%64 != 0 || time.Now().Before(deadline)) {
			in, err := f.Contains(key(rng.Uint64()))
			if err != nil {
				lookupErr = err
				return
			}
			if in {
				l.Positives++
			}
			l.N++
		}
		l.Elapsed = time.Since(t0)
		l.Reads = f.Stats().PageReads - reads0
	}
	measure(&r.CFNeg, func(j uint64) uint64 { return r.key(r.N + 1 + j>>1) })
	measure(&r.CFPos, func(j uint64) uint64 { return r.key(j % r.N) })
	return lookupErr
}

func (r *Result) bloom(path string) error {
	cfg := r.Cfg
	b, err := newDiskBloom(path, r.N, cfg.FPRate, cfg.RAMBytes, cfg.Cached)
	if err != nil {
		return err
	}
	defer b.close()
	r.BFBits, r.BFHashes = b.m, b.k
	t0 := time.Now()
	if err := b.bulkLoad(r.N, r.key); err != nil {
		return err
	}
	r.BFBulk = time.Since(t0)
	if r.IOPS, err = probeDisk(b.f, b.m/pageBits, b.io, r.Cfg); err != nil {
		return err
	}
	measure := func(l *lookups, key func(j uint64) uint64) error {
		rng := rand.New(rand.NewPCG(cfg.Seed, 77))
		reads0 := b.reads
		t0 := time.Now()
		deadline := t0.Add(time.Duration(cfg.LookupSeconds * float64(time.Second)))
		for l.N < uint64(cfg.MaxLookups) && (l.N%64 != 0 || time.Now().Before(deadline)) {
			in, err := b.contains(key(rng.Uint64()))
			if err != nil {
				return err
			}
			if in {
				l.Positives++
			}
			l.N++
		}
		l.Elapsed = time.Since(t0)
		l.Reads = b.reads - reads0
		return nil
	}
	if err := measure(&r.BFNeg, func(j uint64) uint64 { return r.key(r.N + 1 + j>>1) }); err != nil {
		return err
	}
	if err := measure(&r.BFPos, func(j uint64) uint64 { return r.key(j % r.N) }); err != nil {
		return err
	}
	// Inserts of fresh keys into the filled filter, whole flushes at a
	// time, until the time is up.
	w0, f0 := b.writes, b.flushes
	t0 = time.Now()
	deadline := t0.Add(time.Duration(cfg.BloomSeconds * float64(time.Second)))
	var n uint64
	for {
		if err := b.add(r.key(2*r.N + n)); err != nil {
			return err
		}
		n++
		if len(b.buf)+b.k > cap(b.buf) && !time.Now().Before(deadline) {
			break
		}
	}
	if err := b.sync(); err != nil {
		return err
	}
	r.BFInsert = rate{n, time.Since(t0)}
	r.BFFlushes = b.flushes - f0
	r.BFPagesPerFlush = float64(b.writes-w0) / float64(r.BFFlushes)
	return nil
}

// probeDisk measures random 4 KiB reads per second on a file of pages
// pages opened with O_DIRECT (unless the run is cached), one read at a
// time, for two seconds (or the lookups' time, if shorter): the rate both structures' lookups are bounded
// by, measured next to their own lookups because a shared machine's disk
// varies.
func probeDisk(f *os.File, pages uint64, buf []byte, cfg Config) (float64, error) {
	rng := rand.New(rand.NewPCG(cfg.Seed, 3))
	t0 := time.Now()
	span := time.Duration(min(2, cfg.LookupSeconds) * float64(time.Second))
	var n int
	for time.Since(t0) < span {
		if _, err := f.ReadAt(buf[:pageSize], int64(rng.Uint64N(pages)*pageSize)); err != nil {
			return 0, err
		}
		n++
	}
	return float64(n) / time.Since(t0).Seconds(), nil
}

// probeLevels runs probeDisk on the largest level file in dir.
func (r *Result) probeLevels(dir string) error {
	files, _ := filepath.Glob(filepath.Join(dir, "level-*.qfl"))
	var big string
	var size int64
	for _, p := range files {
		if st, err := os.Stat(p); err == nil && st.Size() > size {
			big, size = p, st.Size()
		}
	}
	if big == "" {
		return fmt.Errorf("eval cascade: no level file in %s", dir)
	}
	var f *os.File
	var err error
	if r.Cfg.Cached {
		f, err = os.Open(big)
	} else {
		f, err = openDirectRead(big)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	buf, err := alignedBuf(pageSize)
	if err != nil {
		return err
	}
	defer freeBuf(buf)
	r.CFIOPS, err = probeDisk(f, uint64(size/pageSize), buf, r.Cfg)
	return err
}
