package scbf

import (
	"fmt"
	"path/filepath"
	"testing"
)

const benchCapacity = 100_000

// benchFilter is a filter of benchCapacity-element sub-filters filled to
// subs of them (keys i·golden for ids i).
func benchFilter(b *testing.B, subs int, r float64) *Filter {
	f := mustNew(b, Options{Capacity: benchCapacity, ErrorRate: 0.01, Ratio: r})
	for i := range uint64(subs * benchCapacity) {
		mustAdd(b, f, i*0x9e3779b97f4a7c15, i)
	}
	return f
}

// BenchmarkCheck: present keys (found in their own sub-filter, the scan
// reaching it from the newest) and absent keys (every sub-filter
// scanned, about two probes each).
func BenchmarkCheck(b *testing.B) {
	for _, r := range []float64{RatioCode, RatioREADME} {
		for _, subs := range []int{1, 10} {
			f := benchFilter(b, subs, r)
			n := uint64(subs * benchCapacity)
			for _, present := range []bool{true, false} {
				b.Run(fmt.Sprintf("r=%v/subs=%d/present=%v", r, subs, present), func(b *testing.B) {
					b.ReportAllocs()
					var i uint64
					for b.Loop() {
						k := i % n * 0x9e3779b97f4a7c15
						if !present {
							k = ^k
						}
						sink = sink != f.Check(k)
						i++
					}
				})
			}
		}
	}
}

// BenchmarkAddRemove adds a key to the newest sub-filter and removes it
// again (two operations an iteration), on a filter of 1 or 10 full
// sub-filters, on the heap and in a file (never flushed: the first add
// syncs the dirty marker, the rest only write the mapping).
func BenchmarkAddRemove(b *testing.B) {
	for _, r := range []float64{RatioCode, RatioREADME} {
		for _, subs := range []int{1, 10} {
			f := benchFilter(b, subs, r)
			b.Run(fmt.Sprintf("r=%v/subs=%d/heap", r, subs), func(b *testing.B) { benchAddRemove(b, f) })
			path := filepath.Join(b.TempDir(), "b.scbf")
			ff := mustCreate(b, path, f.opts)
			if err := ff.resize(len(f.mem)); err != nil {
				b.Fatal(err)
			}
			copy(ff.mem, f.mem)
			ff.subs = f.subs
			b.Run(fmt.Sprintf("r=%v/subs=%d/file", r, subs), func(b *testing.B) { benchAddRemove(b, ff) })
			ff.Close()
		}
	}
}

func benchAddRemove(b *testing.B, f *Filter) {
	b.ReportAllocs()
	id := get(f.mem, offMaxID)
	var i uint64
	for b.Loop() {
		k := ^(i * 0x9e3779b97f4a7c15)
		if err := f.Add(k, id); err != nil {
			b.Fatal(err)
		}
		if _, err := f.Remove(k, id); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkAddScaling adds fresh keys with increasing ids from an empty
// filter: the cost of an add as the filter scales, growth included
// (heap growth copies the image; a file is extended and remapped).
func BenchmarkAddScaling(b *testing.B) {
	for _, r := range []float64{RatioCode, RatioREADME} {
		b.Run(fmt.Sprintf("r=%v/heap", r), func(b *testing.B) {
			benchAdd(b, mustNew(b, Options{Capacity: benchCapacity, ErrorRate: 0.01, Ratio: r}))
		})
		b.Run(fmt.Sprintf("r=%v/file", r), func(b *testing.B) {
			f := mustCreate(b, filepath.Join(b.TempDir(), "b.scbf"), Options{Capacity: benchCapacity, ErrorRate: 0.01, Ratio: r})
			defer f.Close()
			benchAdd(b, f)
		})
	}
}

func benchAdd(b *testing.B, f *Filter) {
	b.ReportAllocs()
	var i uint64
	for b.Loop() {
		if err := f.Add(i*0x9e3779b97f4a7c15, i); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(len(f.subs)), "subfilters")
}
