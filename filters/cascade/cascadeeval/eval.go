package cascadeeval

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
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
	Cfg             Config
	N               uint64 // keys inserted
	CF              cascade.Stats
	CFInsert        rate
	CFMerges        int
	CFMergeTime     time.Duration
	CFLongestStall  time.Duration
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

func (r *Result) cascade(dir string) error {
	cfg := r.Cfg
	f, err := cascade.Open(dir, cascade.Options{RAMBytes: cfg.RAMBytes, Capacity: r.N, FPRate: cfg.FPRate, Uncached: !cfg.Cached})
	if err != nil {
		return err
	}
	defer f.Close()
	cap0 := f.Stats().QF0Capacity
	t0 := time.Now()
	for i := range r.N {
		if i > 0 && i%cap0 == 0 {
			// QF0 is full: this insertion merges first.
			m0 := time.Now()
			if err := f.Insert(r.key(i)); err != nil {
				return err
			}
			d := time.Since(m0)
			r.CFMerges++
			r.CFMergeTime += d
			r.CFLongestStall = max(r.CFLongestStall, d)
			continue
		}
		if err := f.Insert(r.key(i)); err != nil {
			return err
		}
	}
	r.CFInsert = rate{r.N, time.Since(t0)}
	r.CF = f.Stats()
	if err := r.probeLevels(dir); err != nil {
		return err
	}
	var lookupErr error
	measure := func(l *lookups, key func(j uint64) uint64) {
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(len(r.CF.Levels))))
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

// Write prints the results as markdown: what was run, a summary row per
// result, then each result's details.
func Write(w io.Writer, cfg Config, rs []*Result) error {
	var sb strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&sb, format, a...) }
	cache := ""
	if cfg.Cached {
		cache = " -cached"
	}
	p("# Cascade Filter against a buffered Bloom filter on disk\n\n")
	p("Generated by `flowmon eval cascade -sizes %s -fp %g -bloom-seconds %g -lookup-seconds %g -max-lookups %d -seed %d%s`. "+
		"Bender et al., \"Don't thrash: how to cache your hash on flash\" (HotStorage 2011), Section 3; packages filters/cascade and filters/qf, "+
		"the baseline in filters/cascade/cascadeeval.\n\n",
		FormatSizes(cfg.Sizes), cfg.FPRate, cfg.BloomSeconds, cfg.LookupSeconds, cfg.MaxLookups, cfg.Seed, cache)
	p("| RAM budget | data set (Bloom filter on disk ÷ budget) | keys | Cascade inserts/s | Bloom inserts/s | insert ratio | Cascade absent lookups/s (reads each) | Bloom absent lookups/s (reads each) | disk random reads/s (cascade's, Bloom's turn) |\n")
	p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		p("| %s | %g× | %s | %s | %s | **%.0f×** | %s (%.2f) | %s (%.2f) | %s, %s |\n", mib(r.Cfg.RAMBytes), r.Cfg.Ratio, commas(r.N),
			si(r.CFInsert.PerSec()), si(r.BFInsert.PerSec()), r.CFInsert.PerSec()/r.BFInsert.PerSec(),
			si(r.CFNeg.PerSec()), r.CFNeg.ReadsPer(), si(r.BFNeg.PerSec()), r.BFNeg.ReadsPer(), si(r.CFIOPS), si(r.IOPS))
	}
	writeReading(&sb, rs)
	for _, r := range rs {
		p("\n## %s of RAM each, data set %g× the budget\n\n", mib(r.Cfg.RAMBytes), r.Cfg.Ratio)
		r.write(&sb)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// writeReading explains the summary against the paper.
func writeReading(sb *strings.Builder, rs []*Result) {
	if len(rs) == 0 {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(sb, format, a...) }
	cold := !rs[0].Cfg.Cached
	p("\n## Reading the figures\n\n")
	p("The paper (an Intel X25-M SSD, 256 MB of RAM for the filter, 8.59 billion keys, 0.04%%) measured the Cascade Filter at 670,000 inserts/s against 17,000 for the elevator Bloom filter — about 40× — and 530 absent-key lookups/s against 1,609 (3×), each lookup costing one read per level (6 levels) against two for the Bloom filter. ")
	p("Here the Cascade Filter inserts %s to %s keys/s, most of the time in merges, which write their level sequentially at the tens of MB/s of the detail tables, well under the disk's rate: CPU-bound, as the paper found. ",
		si(minOf(rs, func(r *Result) float64 { return r.CFInsert.PerSec() })), si(maxOf(rs, func(r *Result) float64 { return r.CFInsert.PerSec() })))
	r0 := rs[0]
	p("The buffered Bloom filter's insert rate is set by how fast the disk rewrites the filter: with the data set %g× the buffer, a flush of %d positions touched %.0f%% of the file's pages, each read and written back (runs of consecutive pages coalesced into 1 MiB I/Os: a stronger baseline than the paper's, which flushed bit by bit in offset order), so each flush costs about a rewrite of the file and buys buffer/k insertions: the rate falls as the data set grows past the buffer, while the Cascade Filter's falls only with the number of levels. ",
		r0.Cfg.Ratio, r0.Cfg.RAMBytes/8, 100*r0.BFPagesPerFlush/float64(r0.BFBits/pageBits))
	if len(rs) > 1 {
		p("The insert ratio goes from %.0f× at %g× to %.0f× at %g×. ", r0.CFInsert.PerSec()/r0.BFInsert.PerSec(), r0.Cfg.Ratio,
			rs[len(rs)-1].CFInsert.PerSec()/rs[len(rs)-1].BFInsert.PerSec(), rs[len(rs)-1].Cfg.Ratio)
	}
	p("The paper's 40× came with its filter some 32 to 64 times its buffer on a 2011 SSD doing 110 MB/s sequential writes; this virtual disk moves the Bloom filter's flushes at the rate the detail tables give, so a data set this size leaves the Bloom filter less behind. ")
	p("Lookups are bounded by random reads: each structure's absent-key rate is close to the disk's random 4 KiB reads/s divided by its reads per lookup (the *model* row), as in the paper; the Cascade Filter reads one page per level, the Bloom filter about two (it stops at the first clear bit; k = 11 for a present key).\n\n")
	if cold {
		p("Cache: the figures are cold-cache. Lookups of both structures read with O_DIRECT, so the page cache serves none of them; the Cascade Filter's merges drop each level they write from the page cache (fsync, then posix_fadvise DONTNEED), so the next merge reads it from the disk; the Bloom filter reads and writes with O_DIRECT. The disk is a virtio block device (ext4) of a shared virtual machine: a cache on the host, out of the guest's reach, may serve some reads, and other guests' load moves the figures between runs (the disk's random-read rate is probed next to each structure's lookups for that reason). `-cached` runs the same with the page cache serving.\n")
	} else {
		p("Cache: warm (`-cached`): the page cache serves what it holds, so lookups mostly measure memory, not the disk.\n")
	}
}

func minOf(rs []*Result, f func(*Result) float64) float64 {
	m := f(rs[0])
	for _, r := range rs[1:] {
		m = min(m, f(r))
	}
	return m
}

func maxOf(rs []*Result, f func(*Result) float64) float64 {
	m := f(rs[0])
	for _, r := range rs[1:] {
		m = max(m, f(r))
	}
	return m
}

// bfBytes is what the Bloom filter's measured flushes read and wrote.
func (r *Result) bfBytes() uint64 {
	return uint64(2 * r.BFPagesPerFlush * float64(r.BFFlushes) * pageSize)
}

// write prints one result's details.
func (r *Result) write(sb *strings.Builder) {
	cfg := r.Cfg
	p := func(format string, a ...any) { fmt.Fprintf(sb, format, a...) }
	cf, bf := r.CF, r.BFBits/8
	mode := "cold: lookups read with O_DIRECT (page cache bypassed) and merges drop the levels they write from the page cache (posix_fadvise DONTNEED); the Bloom filter reads and writes with O_DIRECT"
	if cfg.Cached {
		mode = "warm: the page cache serves what it holds (no O_DIRECT, no fadvise)"
	}
	p("| | Cascade Filter | buffered Bloom filter |\n|---|---:|---:|\n")
	p("| RAM budget | QF0: %s (%d slots, %d fingerprints a merge) | insert buffer: %s (%d positions) |\n",
		mib(cfg.RAMBytes), cf.QF0Slots, cf.QF0Capacity, mib(cfg.RAMBytes), cfg.RAMBytes/8)
	p("| other RAM | page checksums: %s; a merge reads each level through 128 KiB | a 1 MiB I/O buffer |\n", kib(cf.RAMBytes-cf.QF0Bytes))
	p("| on disk | %s in %d levels (%.1f× the budget) | %s (%.1f× the budget) |\n",
		mib(cf.DiskBytes), len(cf.Levels), float64(cf.DiskBytes)/float64(cfg.RAMBytes), mib(bf), float64(bf)/float64(cfg.RAMBytes))
	p("| shape | %d-bit fingerprints, levels of 2^%d.. slots | m = %d bits, k = %d |\n", cf.FingerprintBits, log2(cf.QF0Slots), r.BFBits, r.BFHashes)
	p("| inserts/s | **%s** (%d keys in %s; %d merges took %s, the longest %s) | **%s** (%d keys in %s: %d flushes of %.0f pages read and written) |\n",
		si(r.CFInsert.PerSec()), r.CFInsert.N, dur(r.CFInsert.Elapsed), r.CFMerges, dur(r.CFMergeTime), dur(r.CFLongestStall),
		si(r.BFInsert.PerSec()), r.BFInsert.N, dur(r.BFInsert.Elapsed), r.BFFlushes, r.BFPagesPerFlush)
	p("| disk traffic of the inserts | merges wrote %s, %s/s of merge time (and read the levels they merged) | flushes read and wrote %s, %s/s |\n",
		mib(cf.BytesWritten), mib(uint64(float64(cf.BytesWritten)/r.CFMergeTime.Seconds())),
		mib(r.bfBytes()), mib(uint64(float64(r.bfBytes())/r.BFInsert.Elapsed.Seconds())))
	p("| absent-key lookups/s | **%s** (%.2f page reads each) | **%s** (%.2f page reads each) |\n",
		si(r.CFNeg.PerSec()), r.CFNeg.ReadsPer(), si(r.BFNeg.PerSec()), r.BFNeg.ReadsPer())
	p("| model: disk reads/s ÷ reads per lookup | %s | %s |\n", si(r.CFIOPS/r.CFNeg.ReadsPer()), si(r.IOPS/r.BFNeg.ReadsPer()))
	p("| present-key lookups/s | %s (%.2f page reads each) | %s (%.2f page reads each) |\n",
		si(r.CFPos.PerSec()), r.CFPos.ReadsPer(), si(r.BFPos.PerSec()), r.BFPos.ReadsPer())
	p("| false positives among absent lookups | %d of %d (%.3g%%) | %d of %d (%.3g%%) |\n",
		r.CFNeg.Positives, r.CFNeg.N, 100*float64(r.CFNeg.Positives)/float64(r.CFNeg.N),
		r.BFNeg.Positives, r.BFNeg.N, 100*float64(r.BFNeg.Positives)/float64(r.BFNeg.N))
	p("\nInsert throughput, Cascade over Bloom: **%.0f×** (the paper: 670,000 against 17,000 inserts/s, about 40×). "+
		"Absent-key lookups, Bloom over Cascade: %.1f× (the paper: 1,609 against 530 lookups/s, 3×).\n\n",
		r.CFInsert.PerSec()/r.BFInsert.PerSec(), r.BFNeg.PerSec()/r.CFNeg.PerSec())
	p("Data set: %d keys, %.0f× the RAM budget as a Bloom filter on disk; false-positive target %g; this disk gave %s random 4 KiB reads/s before the cascade's lookups (probed on its largest level) and %s before the Bloom filter's (on its file), O_DIRECT, one at a time. Cache: %s. The Bloom filter's lookups run on a filter bulk-loaded with the %d keys by the harness (%s, not counted); its inserts then add fresh keys to it for %gs, whole flushes. The whole run took %s.\n",
		r.N, cfg.Ratio, cfg.FPRate, si(r.CFIOPS), si(r.IOPS), mode, r.N, dur(r.BFBulk), cfg.BloomSeconds, dur(r.Wall))
	p("\nLevels after the inserts:\n\n| level | fingerprints | slots | load | file |\n|---:|---:|---:|---:|---:|\n")
	for _, l := range cf.Levels {
		p("| %d | %d | %d | %.3f | %s |\n", l.Level, l.Items, l.Slots, l.Load, mib(l.Bytes))
	}
	p("| QF0 | %d | %d | %.3f | (RAM) |\n", cf.QF0Items, cf.QF0Slots, float64(cf.QF0Items)/float64(cf.QF0Slots))
}

func log2(n uint64) int { return int(math.Round(math.Log2(float64(n)))) }

func mib(b uint64) string {
	if b < 1<<20 {
		return kib(b)
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}
func kib(b uint64) string { return fmt.Sprintf("%.0f KiB", float64(b)/(1<<10)) }

func dur(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
}

// si prints a rate with three significant figures and thousands
// separators.
func si(x float64) string {
	switch {
	case x >= 100:
		return commas(uint64(math.Round(x)))
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}

func commas(n uint64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
