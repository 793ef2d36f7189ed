// Package memhint holds the hints flowmon's large tables give the
// machine about their memory: transparent huge pages for a big array
// (fewer TLB misses on random access) and software prefetches, so a batch
// of packets can start the cache misses of several flows at once. Hints
// change speed, never results: each has a no-op build where the platform
// lacks it.
package memhint
