package kbf

import "unsafe"

// batchAhead is how many keys ahead of the one being decoded QueryBatch
// prefetches: enough that the lines of several keys are in flight while
// one key decodes (about 16 misses per core can be outstanding, and a key
// needs k lines in the standard layout, g in the blocked one).
const batchAhead = 8

// QueryBatch answers Query for each of keys, writing the values to vals
// and the results to res, and returns the number of keys answered,
// min(len(keys), len(vals), len(res)). The answers and Stats are exactly
// those of calling Query on each key in turn; only the order of memory
// accesses differs: the cells of the key batchAhead places ahead are
// prefetched while a key decodes, so the cache misses of several keys
// overlap instead of each query waiting for its own. This is how a caller
// holding a batch of packets (flowmon's workers take 256 at a time) should
// query. It allocates nothing.
func (f *Filter) QueryBatch(keys []uint64, vals []uint32, res []Result) int {
	n := min(len(keys), len(vals), len(res))
	if f.byLines {
		return f.queryBatchLines(keys[:n], vals, res)
	}
	var ring [batchAhead][MaxK]int
	for i := 0; i < min(n, batchAhead); i++ {
		f.locate(keys[i], &ring[i])
		f.prefetch(&ring[i])
	}
	for i := 0; i < n; i++ {
		slot := &ring[i%batchAhead]
		vals[i], res[i] = f.queryAt(slot)
		if next := i + batchAhead; next < n {
			f.locate(keys[next], slot)
			f.prefetch(slot)
		}
	}
	return n
}

// Prefetch starts loading the cache lines that an operation on key reads
// (its g lines in the blocked layout, its k cells' lines in the standard
// one) and returns at once; it changes nothing. A caller that knows its
// next keys but must handle them one at a time (flowmon's workers update
// each flow's state before the next packet's lookup) prefetches a few
// keys ahead, so that, as in QueryBatch, the misses of several keys
// overlap. It allocates nothing.
func (f *Filter) Prefetch(key uint64) {
	if f.perLine == 0 {
		var idx [MaxK]int
		f.locate(key, &idx)
		f.prefetchIdx(&idx[0], f.k)
		return
	}
	var lines [4]int // a cell of each line; which cells a key takes is not needed
	line, step, _ := f.blockHash(f.keyHashes(key))
	for g := range f.groups {
		lines[g&3] = int(line) * f.perLine
		line = f.nextLine(line, step)
	}
	f.prefetchIdx(&lines[0], f.groups)
}

// prefetch starts loading the cache lines of the k cells idx: one
// prefetch per cell in the standard layout, one per line (the line's
// first cell, f.firsts) in the blocked one.
func (f *Filter) prefetch(idx *[MaxK]int) {
	if f.groups == 0 {
		f.prefetchIdx(&idx[0], f.k)
		return
	}
	var lines [4]int
	for g := range f.groups {
		lines[g&3] = idx[f.firsts[g]]
	}
	f.prefetchIdx(&lines[0], f.groups)
}

// prefetchIdx starts loading the lines of the n cells idx[0..n) (idx
// points at the first of n ints).
func (f *Filter) prefetchIdx(idx *int, n int) {
	if f.c16 != nil {
		prefetchCells(unsafe.Pointer(unsafe.SliceData(f.c16)), idx, n, 2)
		return
	}
	prefetchCells(unsafe.Pointer(unsafe.SliceData(f.c32)), idx, n, 4)
}

// lineAhead is batchAhead for the line form, whose keys take less time
// each: 16 keys of two lines keep about as many misses in flight as the
// CPU allows (BenchmarkLineReads prefetches as far); other distances gain
// nothing at 10M keys (docs/results/kbf-layouts.md, "Reading").
const lineAhead = 16

// queryBatchLines is QueryBatch in the line form (lines.go).
func (f *Filter) queryBatchLines(keys []uint64, vals []uint32, res []Result) int {
	n := len(keys)
	var ring [lineAhead]lineQuery
	for i := 0; i < min(n, lineAhead); i++ {
		f.locateLines(keys[i], &ring[i])
		f.prefetchIdx(&ring[i].line[0], f.groups)
	}
	for i := 0; i < n; i++ {
		lq := &ring[i%lineAhead]
		vals[i], res[i] = f.queryLines(keys[i], lq)
		if next := i + lineAhead; next < n {
			f.locateLines(keys[next], lq)
			f.prefetchIdx(&lq.line[0], f.groups)
		}
	}
	return n
}
