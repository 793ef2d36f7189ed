package memfloor

import (
	"math/bits"
	"testing"
)

// tableSizes are the tables the misses are measured in: 64 MB, the scale
// of flowmon's own per-packet tables (a whole replay of the benchmark
// traces peaks near it: docs/results/pipeline.md, "What stands between
// this and 5 Mpps on one core") and past any last-level cache here, and
// 1 GB, where the page tables themselves no longer stay in cache, so most
// loads also take a TLB miss whose page walk misses too (under
// virtualisation, a nested walk). Quote the size a claim is about: the
// two differ by an order of magnitude when misses overlap.
var tableSizes = []struct {
	name  string
	bytes int
}{{"64MB", 64 << 20}, {"1GB", 1 << 30}}

const lineWords = 8 // 64-byte cache lines of uint64

// cycle returns a table of n lines whose first words link every line into
// one random cycle (Sattolo's algorithm), so a pointer chase visits all
// lines in an order the prefetchers cannot guess.
func cycle(n int) []uint64 {
	t := make([]uint64, n*lineWords)
	perm := make([]uint32, n)
	for i := range perm {
		perm[i] = uint32(i)
	}
	x := uint64(0x9e3779b97f4a7c15) // fixed seed: the same walk every run
	for i := n - 1; i > 0; i-- {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		hi, _ := bits.Mul64(x, uint64(i))
		j := int(hi)
		perm[i], perm[j] = perm[j], perm[i]
	}
	for i := range n {
		t[int(perm[i])*lineWords] = uint64(perm[(i+1)%n])
	}
	return t
}

var sink uint64

// BenchmarkLatency: one dependent load at a time, each a cache miss: the
// cost of a lookup that cannot be overlapped.
func BenchmarkLatency(b *testing.B) {
	for _, size := range tableSizes {
		b.Run(size.name, func(b *testing.B) {
			t := cycle(size.bytes / 64)
			b.ReportAllocs()
			b.ResetTimer()
			var p uint64
			for range b.N {
				p = t[p*lineWords]
			}
			sink = p
		})
	}
}

// BenchmarkParallelMisses: independent random loads, 16 in flight: the
// per-load cost a batch that computes all its addresses first can reach
// (ns/op is per load).
func BenchmarkParallelMisses(b *testing.B) {
	const ways = 16
	for _, size := range tableSizes {
		b.Run(size.name, func(b *testing.B) {
			t := cycle(size.bytes / 64)
			var p [ways]uint64
			for i := range p {
				p[i] = uint64(i) * 7919 % uint64(len(t)/lineWords)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += ways {
				for w := range p {
					p[w] = t[p[w]*lineWords]
				}
			}
			var s uint64
			for _, v := range p {
				s += v
			}
			sink = s
		})
	}
}

// BenchmarkStream: sequential reads, reported as bytes/s: the bandwidth
// a reader of packets from the page cache competes for.
func BenchmarkStream(b *testing.B) {
	t := make([]uint64, 256<<20/8)
	for i := range t {
		t[i] = uint64(i)
	}
	b.SetBytes(int64(len(t) * 8))
	b.ReportAllocs()
	b.ResetTimer()
	var s uint64
	for range b.N {
		for i := 0; i < len(t); i += 4 {
			s += t[i] ^ t[i+1] ^ t[i+2] ^ t[i+3]
		}
	}
	sink = s
}
