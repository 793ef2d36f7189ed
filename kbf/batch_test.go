package kbf

import (
	"github.com/flowmon/flowmon/internal/hashmix"
	"github.com/flowmon/flowmon/internal/testutil/cputime"
	"math/bits"
	"runtime"
	"slices"
	"testing"
	"time"
)

// TestQueryBatchMatchesQuery checks that QueryBatch gives Query's answers
// and Stats, for stored and absent keys, both layouts and cell widths, the
// blocked layout in the line form and cell by cell, an overloaded filter
// (Unknown answers) and every batch length up to past the prefetch
// distance.
func TestQueryBatchMatchesQuery(t *testing.T) {
	for _, c := range []struct {
		o     Options
		cells bool // query cell by cell even where the line form runs
	}{
		{Options{Capacity: 3000, FPRate: 1e-3, Values: 100, Encoder: Sidon}, false},
		{Options{Capacity: 3000, FPRate: 1e-3, Values: 100, Encoder: Sidon, Layout: Blocked}, false},
		{Options{Capacity: 3000, FPRate: 1e-3, Values: 100, Encoder: Sidon, Layout: Blocked}, true},
		{Options{Capacity: 3000, FPRate: 1e-2, Values: 50, Encoder: Greedy, CellBits: 16, Layout: Blocked}, false},
		{Options{Capacity: 3000, FPRate: 1e-2, Values: 50, Encoder: Greedy, CellBits: 16, SizeFactor: 0.4}, false},
	} {
		o := c.o
		a, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := New(o)
		if c.cells {
			a.byLines, b.byLines = false, false
		}
		for j := 0; j < o.Capacity; j++ {
			a.Insert(benchKey(j), uint32(j%o.Values))
			b.Insert(benchKey(j), uint32(j%o.Values))
		}
		keys := make([]uint64, 0, 2*o.Capacity)
		for j := 0; j < 2*o.Capacity; j++ {
			keys = append(keys, benchKey(j*7%(2*o.Capacity)))
		}
		vals := make([]uint32, len(keys))
		res := make([]Result, len(keys))
		for start, size := 0, 0; start < len(keys); start, size = start+size, size%(2*batchAhead+3)+1 {
			end := min(start+size, len(keys))
			if n := b.QueryBatch(keys[start:end], vals[start:end], res[start:end]); n != end-start {
				t.Fatalf("QueryBatch answered %d of %d", n, end-start)
			}
		}
		counts := [3]int{}
		for i, key := range keys {
			v, r := a.Query(key)
			if r != res[i] || (r == Found && v != vals[i]) {
				t.Fatalf("%+v key %d: Query %v %d, QueryBatch %v %d", o, i, r, v, res[i], vals[i])
			}
			counts[r]++
		}
		if a.Stats() != b.Stats() {
			t.Errorf("%+v: stats differ: Query %+v, QueryBatch %+v", o, a.Stats(), b.Stats())
		}
		t.Logf("%v/%d bits/size %g/cell by cell %v: absent %d found %d unknown %d", o.Layout, o.CellBits, o.SizeFactor, c.cells, counts[Absent], counts[Found], counts[Unknown])
	}
}

func TestQueryBatchShortSlices(t *testing.T) {
	f, err := New(Options{Capacity: 100, FPRate: 1e-3, Values: 10, Encoder: Sidon})
	if err != nil {
		t.Fatal(err)
	}
	if n := f.QueryBatch(make([]uint64, 20), make([]uint32, 5), make([]Result, 30)); n != 5 {
		t.Errorf("answered %d, want 5", n)
	}
	if n := f.QueryBatch(nil, nil, nil); n != 0 {
		t.Errorf("answered %d, want 0", n)
	}
}

func TestQueryBatchNoAllocs(t *testing.T) {
	for _, lay := range []LayoutKind{Standard, Blocked} {
		f, err := New(Options{Capacity: 1000, FPRate: 1e-3, Values: 100, Encoder: Sidon, Layout: lay})
		if err != nil {
			t.Fatal(err)
		}
		keys := make([]uint64, 256)
		for j := range keys {
			keys[j] = benchKey(j)
			f.Insert(keys[j], uint32(j%100))
		}
		vals, res := make([]uint32, len(keys)), make([]Result, len(keys))
		if a := testing.AllocsPerRun(100, func() { f.QueryBatch(keys, vals, res) }); a != 0 {
			t.Errorf("%v: QueryBatch allocates %v times", lay, a)
		}
	}
}

// BenchmarkQueryBatch queries stored keys in batches of 256 (a worker's
// packet batch) with QueryBatch.
func BenchmarkQueryBatch(b *testing.B) {
	forLayouts(b, func(b *testing.B, f *Filter, n int) {
		var keys [256]uint64
		var vals [256]uint32
		var res [256]Result
		j := 0
		for b.Loop() {
			for q := range keys {
				keys[q] = benchKey(j)
				if j++; j == n {
					j = 0
				}
			}
			f.QueryBatch(keys[:], vals[:], res[:])
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/key")
	})
}

// BenchmarkQueryBatchRatio compares the layouts of benchLayouts on the
// same keys with the same API, one key at a time (Query) and in batches of
// 256 (QueryBatch), interleaved in rounds of 4096 stored keys as in
// BenchmarkQueryRatio and timed by the thread's CPU clock. The keys of a
// round are generated before the timers start, so only the queries are
// timed. The reads figures run QueryBatch's pipeline without the decode
// (locate, prefetch, read the k cells): the memory-bound part.
func BenchmarkQueryBatchRatio(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			fs := layoutFilters(b, s.n)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			const round, batch = 4096, 256
			keys := make([]uint64, round)
			vals := make([]uint32, batch)
			res := make([]Result, batch)
			single := make([]time.Duration, len(fs))
			batched := make([]time.Duration, len(fs))
			reads := make([]time.Duration, len(fs))
			j, rounds := 0, 0
			for b.Loop() {
				for q := range keys {
					keys[q] = benchKey((j + q) % s.n)
				}
				for i, f := range fs {
					c := cputime.Thread()
					for _, key := range keys {
						sinkV, sinkR = f.Query(key)
					}
					single[i] += cputime.Thread() - c
					c = cputime.Thread()
					for q := 0; q < round; q += batch {
						f.QueryBatch(keys[q:q+batch], vals, res)
					}
					batched[i] += cputime.Thread() - c
					c = cputime.Thread()
					for q := 0; q < round; q += batch {
						sinkV += batchReads(f, keys[q:q+batch])
					}
					reads[i] += cputime.Thread() - c
				}
				j, rounds = (j+round)%s.n, rounds+1
			}
			reportLayouts(b, single, rounds*round, "cpu-ns/q-", "x-single-")
			reportLayouts(b, batched, rounds*round, "cpu-ns/q-batch-", "x-batch-")
			reportLayouts(b, reads, rounds*round, "cpu-ns/q-reads-", "x-reads-")
		})
	}
}

// batchReads is QueryBatch without the decode: each key's cells are
// located and prefetched batchAhead keys ahead, then read and summed (in
// the line form, lineAhead keys ahead, and the key's first cell in each
// line).
func batchReads(f *Filter, keys []uint64) uint32 {
	if f.byLines {
		return batchReadsLines(f, keys)
	}
	var ring [batchAhead][MaxK]int
	for i := 0; i < min(len(keys), batchAhead); i++ {
		f.locate(keys[i], &ring[i])
		f.prefetch(&ring[i])
	}
	var sum uint32
	for i := range keys {
		slot := &ring[i%batchAhead]
		for j := 0; j < f.k; j++ {
			sum += f.cell(slot[j])
		}
		if next := i + batchAhead; next < len(keys) {
			f.locate(keys[next], slot)
			f.prefetch(slot)
		}
	}
	return sum
}

func batchReadsLines(f *Filter, keys []uint64) uint32 {
	var ring [lineAhead]lineQuery
	for i := 0; i < min(len(keys), lineAhead); i++ {
		f.locateLines(keys[i], &ring[i])
		f.prefetchIdx(&ring[i].line[0], f.groups)
	}
	var sum uint32
	for i := range keys {
		lq := &ring[i%lineAhead]
		for g := 0; g < f.groups; g++ {
			sum += f.c32[lq.line[g]+bits.TrailingZeros32(lq.mask[g])&15]
		}
		if next := i + lineAhead; next < len(keys) {
			f.locateLines(keys[next], lq)
			f.prefetchIdx(&lq.line[0], f.groups)
		}
	}
	return sum
}

// TestLocateBlockedSplit pins the blocked layout's placement (32-bit
// cells): locate's precomputed split of the k cells over the lines gives
// the cells of the direct formula, cnt = (k - j) / (groups - g) cells in
// line g, the first cnt of the line's permutation.
func TestLocateBlockedSplit(t *testing.T) {
	for _, p := range []float64{1e-1, 1e-3, 1e-6, 1e-9} {
		for lines := 0; lines <= 4; lines++ {
			o := Options{Capacity: 5000, FPRate: p, Values: 100, Encoder: Sidon, Layout: Blocked, BlockLines: lines}
			if o.Validate() != nil {
				continue
			}
			f, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			for key := uint64(0); key < 2000; key++ {
				var got, want [MaxK]int
				f.locate(key, &got)
				h1 := hashmix.Mix(key ^ f.seed)
				h2 := hashmix.Mix(h1 ^ 0x9e3779b97f4a7c15)
				L := uint64(f.perLine)
				line := hashmix.Reduce(h1, f.lines)
				step := 1 + hashmix.Reduce(h2, f.lines-1)
				h3 := hashmix.Mix(h2)
				j := 0
				for g := 0; g < f.groups; g++ {
					perm := linePerms[(h3>>(permBits*g))%permCount]
					cnt := (f.k - j) / (f.groups - g)
					for c := 0; c < cnt; c++ {
						want[j] = int(line*L + perm%16)
						j++
						perm /= 16
					}
					if line += step; line >= f.lines {
						line -= f.lines
					}
				}
				if got != want {
					t.Fatalf("p %g lines %d key %d: locate %v, want %v", p, lines, key, got[:f.k], want[:f.k])
				}
			}
		}
	}
}

// smallLayouts are small filters of each layout and cell width: the
// standard layout, the blocked one in the line form (32-bit Sidon cells)
// and cell by cell (16-bit cells).
var smallLayouts = []Options{
	{Capacity: 2000, FPRate: 1e-3, Values: 100, Encoder: Sidon},
	{Capacity: 2000, FPRate: 1e-3, Values: 100, Encoder: Sidon, Layout: Blocked},
	{Capacity: 2000, FPRate: 1e-2, Values: 50, Encoder: Greedy, CellBits: 16, Layout: Blocked},
}

// TestPrefetchChangesNothing checks that Prefetch leaves the cells and
// Stats as they were and allocates nothing, in both layouts, the line form
// and cell by cell, 32- and 16-bit cells.
func TestPrefetchChangesNothing(t *testing.T) {
	for _, o := range smallLayouts {
		f := newT(t, o)
		for j := 0; j < o.Capacity; j++ {
			f.Insert(benchKey(j), uint32(j%o.Values))
		}
		c32, c16 := append([]uint32(nil), f.c32...), append([]uint16(nil), f.c16...)
		st := f.Stats()
		j := 0
		if n := testing.AllocsPerRun(1000, func() { f.Prefetch(benchKey(j)); j++ }); n != 0 {
			t.Errorf("%+v: Prefetch allocates %v times", o, n)
		}
		if f.Stats() != st || !slices.Equal(f.c32, c32) || !slices.Equal(f.c16, c16) {
			t.Errorf("%+v: Prefetch changed the filter", o)
		}
	}
}
