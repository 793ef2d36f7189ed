// Package flowcount counts packets per flow in fixed time windows with a
// counting cuckoo filter (filters/ccf; Li, Luo and Guo, "Multiset
// Synchronization with Counting Cuckoo Filters"), and compares the flow
// multisets of two vantage points (Section 4 of the paper).
//
// # Windows
//
// A Counter holds the multiset {flow hash: packets} of the current window.
// Windows are aligned to multiples of Options.Window (default 60 s) since
// the zero time, so two agents' windows line up, and are rotated by packet
// time: the first packet at or past the window's end publishes the window
// as the last complete one and starts a new, empty filter. Count gives a
// flow's packets in the current window; Add returns the new count, so a
// caller detects a heavy hitter online by comparing it with a threshold
// (the count is exact up to the filter's false positives, which only ever
// raise it, and up to 2^c-1 where it saturates).
//
// Memory is fixed from the expected flows per window n and the target
// false-positive rate ε: ceil(n/(4*0.95)) buckets of 4 slots, each slot
// f = ceil(log2(8/ε)) fingerprint bits plus a 32-bit counter. A new flow
// that finds the filter full is not counted (Add returns 0) and counted in
// Stats().Dropped.
//
// # Concurrency
//
// Add and Count belong to one goroutine (the worker that owns the flows'
// shard) and take no lock. Completed windows are handed over through an
// atomic pointer to an immutable Snapshot, which any goroutine may read:
// Last, and the http.Handler that serves GET /api/v1/ccf, never block the
// packet path. With one Counter per worker shard, Handler(shards...)
// serves the merge (ccf.Merge, a multiset sum: shards hold disjoint flows)
// of the shards' latest window, at request time, and LastWindow sums the
// same window's statistics for metrics.
//
// # Diff
//
// Diff and DiffPeer compare two vantage points of the same traffic. Each
// side is a Side: a CCF of its packets per flow and, for naming, an exact
// map from flow hash to flow key (a map of every flow is fine for an
// offline diff of two captures, not for the agent). Each side's flows are
// looked up in the other's filter (the query-based method, Algorithm 4):
// flows seen on one side only, and flows with different packet counts
// (loss, asymmetric routing) are listed with totals. DiffPeer compares a
// capture with a running agent's filter, whose flows have no names there:
// its flows missing from the capture are counted by the decoding-based
// method (Algorithm 5) but cannot be listed.
package flowcount
