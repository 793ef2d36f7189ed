package cascade

import (
	"testing"

	"github.com/flowmon/flowmon/internal/hashmix"
)

// BenchmarkInsert inserts b.N keys into a cascade with 1 MiB of QF0 in a
// temporary directory: QF0's inserts and every merge's sequential pass
// (page cache allowed; cascadeeval measures the disk), with merges in the
// background (two QF0s of 512 KiB; Insert waits when both are full) and
// synchronous (one of 1 MiB).
func BenchmarkInsert(b *testing.B) {
	for _, sync := range []bool{false, true} {
		b.Run(map[bool]string{false: "background", true: "sync"}[sync], func(b *testing.B) {
			f := mustOpen(b, b.TempDir(), Options{RAMBytes: 1 << 20, FingerprintBits: 40, SyncMerge: sync})
			defer f.Close()
			b.ReportAllocs()
			var i uint64
			for b.Loop() {
				if err := f.Insert(hashmix.Mix(i)); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(f.Stats().Merges), "merges")
		})
	}
}

// BenchmarkContains looks up absent keys in a cascade of a few levels
// whose files the page cache holds: the CPU side of a lookup.
func BenchmarkContains(b *testing.B) {
	f := mustOpen(b, b.TempDir(), Options{RAMBytes: 1 << 20, FingerprintBits: 40})
	defer f.Close()
	for i := range uint64(3_000_000) {
		if err := f.Insert(hashmix.Mix(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := uint64(1 << 40)
	for b.Loop() {
		if _, err := f.Contains(hashmix.Mix(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(f.Stats().PageReads)/float64(b.N), "pages/op")
}
