package ccf

import (
	"sync"
	"testing"

	"github.com/flowmon/flowmon/internal/testgate"
)

const golden = 0x9e3779b97f4a7c15

// benchKey is the i-th benchmark key (a bijection of i).
func benchKey(i uint64) uint64 { return i * golden }

var benchFilters sync.Map // size -> *Filter, built on first use

// benchFilter returns a filter holding n keys with count 1, built lazily
// so the 10M filter is only built when a 10M benchmark is selected.
func benchFilter(b *testing.B, n uint64) *Filter {
	testgate.LongSize(b, n)
	if f, ok := benchFilters.Load(n); ok {
		return f.(*Filter)
	}
	f := mustNew(b, Options{Capacity: n, FingerprintBits: 16, CounterBits: 16})
	for i := range n {
		if _, err := f.Insert(benchKey(i), 1); err != nil {
			b.Fatalf("building %d: %v", n, err)
		}
	}
	benchFilters.Store(n, f)
	return f
}

var benchSizes = []struct {
	name string
	n    uint64
}{{"1M", 1_000_000}, {"10M", 10_000_000}}

func BenchmarkIncrement(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			f := benchFilter(b, s.n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range uint64(b.N) {
				if _, err := f.Insert(benchKey(i%s.n), 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCount(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			f := benchFilter(b, s.n)
			b.ReportAllocs()
			b.ResetTimer()
			var sum uint64
			for i := range uint64(b.N) {
				sum += f.Count(benchKey(i % s.n))
			}
			sink = sum
		})
	}
}

func BenchmarkCountMiss(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			f := benchFilter(b, s.n)
			b.ReportAllocs()
			b.ResetTimer()
			var sum uint64
			for i := range uint64(b.N) {
				sum += f.Count(benchKey(s.n + i))
			}
			sink = sum
		})
	}
}

func BenchmarkInsertNew(b *testing.B) {
	const n = 1_000_000
	f := mustNew(b, Options{Capacity: n, FingerprintBits: 16, CounterBits: 16})
	b.ReportAllocs()
	var k uint64
	for b.Loop() {
		if k == n*9/10 {
			b.StopTimer()
			f.Reset()
			k = 0
			b.StartTimer()
		}
		if _, err := f.Insert(benchKey(k), 1); err != nil {
			b.Fatal(err)
		}
		k++
	}
}

func BenchmarkDeleteInsert(b *testing.B) {
	f := benchFilter(b, 1_000_000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range uint64(b.N) {
		k := benchKey(i % 1_000_000)
		f.Delete(k)
		f.Insert(k, 1)
	}
}

var sink uint64

func TestNoAllocs(t *testing.T) {
	f := mustNew(t, Options{Capacity: 10000, FingerprintBits: 12, CounterBits: 10})
	for i := range uint64(5000) {
		f.Insert(benchKey(i), 1)
	}
	var i uint64
	for name, fn := range map[string]func(){
		"increment": func() { f.Insert(benchKey(i%5000), 1); i++ },
		"insert":    func() { f.Insert(benchKey(5000+i%2000), 1); i++ },
		"count":     func() { sink += f.Count(benchKey(i)); i++ },
		"delete":    func() { f.Delete(benchKey(i % 5000)); f.Insert(benchKey(i%5000), 1); i++ },
		"remove":    func() { f.Remove(benchKey(i%5000), 1); f.Insert(benchKey(i%5000), 1); i++ },
		"query":     func() { Query(f, benchKey(i), 1); i++ },
	} {
		if a := testing.AllocsPerRun(1000, fn); a != 0 {
			t.Errorf("%s: %v allocs/op", name, a)
		}
	}
}
