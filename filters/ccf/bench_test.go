package ccf

import (
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowmon/flowmon/internal/testutil/cputime"
	"github.com/flowmon/flowmon/internal/testutil/testgate"
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

// flowOptions is the filter flowcount builds by default (ε = 1e-4 gives
// f = 17, with 32-bit counters): 49-bit slots, most of which straddle two
// words, and 196-bit buckets.
func flowOptions(capacity uint64) Options {
	return Options{Capacity: capacity, FPRate: 1e-4, CounterBits: 32}
}

// flowSizes are a window's flows in cache and a replay's ~500k flows,
// which do not fit (3.4 MB of slots).
var flowSizes = []struct {
	name           string
	capacity, keys uint64
}{{"4k", 4096, 4000}, {"500k", 1 << 19, 500_000}}

// insertImpls are the implementations the benchmarks compare in one
// process: the branch-free scan, the per-slot reference (ref_test.go),
// and the branch-free scan with Prefetch.
var insertImpls = []struct {
	name     string
	insert   func(f *Filter, key, n uint64) (uint64, error)
	prefetch bool
}{
	{"impl=new", (*Filter).Insert, false},
	{"impl=ref", (*Filter).insertRef, false},
	{"impl=prefetch", (*Filter).Insert, true},
}

// keyStream returns 1<<20 keys drawn at random from benchKey(0..n-1): a
// stream that does not repeat every n keys, since a branch predictor
// learns the branches of a short cycle (4000 keys) that real traffic
// never repeats.
func keyStream(n uint64) []uint64 {
	keys := make([]uint64, 1<<20)
	r := rand.New(rand.NewPCG(9, 10))
	for i := range keys {
		keys[i] = benchKey(r.Uint64N(n))
	}
	return keys
}

// prefetchAhead is how many keys ahead of Insert the prefetching
// benchmarks call Prefetch (the engine's distance).
const prefetchAhead = 4

// BenchmarkInsertExisting counts a packet of a flow already in the window
// (a flow's later packets: the common case), the keys in random order.
// impl=prefetch is impl=new with Prefetch prefetchAhead keys ahead.
func BenchmarkInsertExisting(b *testing.B) {
	for _, s := range flowSizes {
		stream := keyStream(s.keys)
		// One filter for every impl: two allocations of 3.4 MB may differ
		// in huge pages and cache placement, which would weigh more than
		// the code compared.
		f := mustNew(b, flowOptions(s.capacity))
		for i := range s.keys {
			if _, err := f.Insert(benchKey(i), 1); err != nil {
				b.Fatal(err)
			}
		}
		for _, im := range insertImpls {
			b.Run(s.name+"/"+im.name, func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				cpu := cputime.Start()
				for b.Loop() {
					if im.prefetch {
						f.Prefetch(stream[(i+prefetchAhead)&(len(stream)-1)])
					}
					if _, err := im.insert(f, stream[i], 1); err != nil {
						b.Fatal(err)
					}
					i = (i + 1) & (len(stream) - 1)
				}
				cpu.Report(b)
			})
		}
	}
}

// BenchmarkInsertNewKey counts the first packet of a flow, with keys that
// never repeat: the window fills to 90% and is reset (outside the timer).
func BenchmarkInsertNewKey(b *testing.B) {
	for _, s := range flowSizes {
		f := mustNew(b, flowOptions(s.capacity)) // one for every impl, as above
		for _, im := range insertImpls {
			b.Run(s.name+"/"+im.name, func(b *testing.B) {
				f.Reset()
				b.ReportAllocs()
				var k, n uint64
				cpu := cputime.Start()
				for b.Loop() {
					if n == s.capacity*9/10 {
						cpu.Pause()
						b.StopTimer()
						f.Reset()
						n = 0
						b.StartTimer()
						cpu.Resume()
					}
					if im.prefetch {
						f.Prefetch(benchKey(k + prefetchAhead))
					}
					if _, err := im.insert(f, benchKey(k), 1); err != nil {
						b.Fatal(err)
					}
					k++
					n++
				}
				cpu.Report(b)
			})
		}
	}
}

// BenchmarkInsertPaired runs the impls in turns of a round of keys on one
// filter, and reports each one's thread CPU time per key
// (cpu-ns/key-<impl>) and its ratio to impl=new's (x-<impl>). Separate
// benchmarks of a table that does not fit in the cache swing by 2x from
// run to run on a shared machine (other tenants' memory traffic); turns a
// millisecond apart see the same machine. "existing" counts keys already
// in the filter, drawn at random; "new" inserts keys never seen, the
// filter being reset at 90% load (outside the clock).
func BenchmarkInsertPaired(b *testing.B) {
	const round = 1024
	for _, s := range flowSizes {
		for _, existing := range []bool{true, false} {
			name := s.name + "/new"
			if existing {
				name = s.name + "/existing"
			}
			b.Run(name, func(b *testing.B) {
				f := mustNew(b, flowOptions(s.capacity))
				var stream []uint64
				if existing {
					for i := range s.keys {
						if _, err := f.Insert(benchKey(i), 1); err != nil {
							b.Fatal(err)
						}
					}
					stream = keyStream(s.keys)
				}
				key := func(i uint64) uint64 {
					if existing {
						return stream[i&uint64(len(stream)-1)]
					}
					return benchKey(i)
				}
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu := make([]time.Duration, len(insertImpls))
				var next, load uint64
				rounds := 0
				for b.Loop() {
					for k := range insertImpls {
						// Each round starts with the next impl, so that
						// none always runs at the same load or first.
						i := (k + rounds) % len(insertImpls)
						im := insertImpls[i]
						if !existing && load+round > s.capacity*9/10 {
							f.Reset()
							load = 0
						}
						c := cputime.Thread()
						for q := range uint64(round) {
							if im.prefetch {
								f.Prefetch(key(next + q + prefetchAhead))
							}
							if _, err := im.insert(f, key(next+q), 1); err != nil {
								b.Fatal(err)
							}
						}
						cpu[i] += cputime.Thread() - c
						next += round
						load += round
					}
					rounds++
				}
				per := func(i int) float64 { return float64(cpu[i].Nanoseconds()) / float64(rounds*round) }
				for i, im := range insertImpls {
					impl := strings.TrimPrefix(im.name, "impl=")
					b.ReportMetric(per(i), "cpu-ns/key-"+impl)
					if i > 0 {
						b.ReportMetric(per(i)/per(0), "x-"+impl)
					}
				}
			})
		}
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
