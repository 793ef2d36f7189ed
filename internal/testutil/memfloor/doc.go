// Package memfloor measures the machine's memory floor: what one cache
// miss costs when each load waits for the last (latency), what a miss
// costs when many are in flight at once (memory-level parallelism, the
// most a batched, prefetching packet path can hope for), and how fast
// memory streams. The package is its benchmarks:
//
//	go test -run '^$' -bench . -count 5 ./internal/testutil/memfloor
//
// A per-packet target that needs fewer nanoseconds than the in-flight
// miss cost times the misses a packet must take cannot be met on the
// machine, whatever the code does; docs/results/pipeline.md quotes these
// figures beside the pipeline's.
package memfloor
