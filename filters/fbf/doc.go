// Package fbf implements the Forgetful Bloom Filter (FBF) of Subramanyam,
// Gupta, Leslie and Wang, "Idempotent Distributed Counters Using a
// Forgetful Bloom Filter": a set that forgets elements older
// than a moving window, used by flowmon to drop duplicate packets and to
// suppress repeated alerts.
//
// # Structure (Section III-A to III-C)
//
// An N-FBF is a list of N+2 Bloom filters of one shape: a future filter, a
// present filter and N past filters, newest first. Insert (Algorithm 1)
// first runs the membership check; an element found absent is added to the
// future and the present filter only. Every refresh period t, a refresh
// cascades the list: the oldest past filter is dropped, every filter moves
// one place older, and an empty future filter is added. An element inserted
// during a period therefore sits in two consecutive filters for N+1
// periods and in the oldest filter alone for one more: it is remembered for
// at least (N+1)·t and at most (N+2)·t (the paper's window ((N+1)t, (N+2)t]).
//
// Time is the caller's: every operation takes now (the packet's time), and
// the filter refreshes when now crosses the next refresh point. After a gap
// of g with no operation, the filter cascades floor(g/t) (+1) times, at most
// N+2 times: after a gap longer than the whole window everything is
// forgotten, in constant time. A replay is deterministic and runs as fast as
// the machine can go.
//
// # Membership check (Section III-D, Algorithm 2)
//
// Only neighbouring filters overlap in time (Property 2), so an element
// genuinely present is in the future filter, or in both filters of some
// consecutive pair, or (inserted N+1 periods ago) in the oldest filter
// alone. The optimized check tests exactly those events; the simple check
// (Section III-A) accepts any single filter. Requiring a pair multiplies two
// small false-positive rates instead of adding them.
//
// The paper's prose ("Finally, the oldest past Bloom filter is checked"),
// its Equation 3 (the i = 0 term p(B_n)) and its stated window
// ((N+1)t, (N+2)t] all count the oldest past filter alone as a match. Its
// pseudo-code does so only for N = 1 (the final test sits in the same
// else-if chain as the loop over pairs). We follow the prose, the equation
// and the window: Optimized counts the oldest filter alone for every N, so
// the window is the same for every N and no element inserted N+1 periods
// ago is forgotten early (a false negative would let a duplicate packet be
// counted). PairsOnly is the other reading, kept for comparison: it never
// counts the oldest alone, which lowers the false-positive rate but
// shortens the window to (N·t, (N+1)·t]. `flowmon eval fbf` measures all
// three checks.
//
// # False-positive probability (Section IV, Equations 1-3)
//
// A filter with m bits and k hashes holding l elements answers a false
// positive with probability (Equation 1)
//
//	p(l) = (1 - (1 - 1/m)^(kl))^k ≈ (1 - e^(-kl/m))^k
//
// (the blocked layout uses the Poisson-averaged rate of package bloom).
// With the filters indexed B_0 = future, B_1 = present, B_2..B_{N+1} =
// past newest..oldest, and assuming independent filters, the optimized
// check errs with probability (Equations 2 and 3)
//
//	P = 1 - (1 - p(B_0)) · Π_{i=1..N} (1 - p(B_i)·p(B_{i+1})) · (1 - p(B_{N+1})).
//
// The simple check errs with 1 - Π_i (1 - p(B_i)); PairsOnly drops the last
// factor. EquationFPP evaluates these formulas on the filters' current
// insertion counts. Filters that never held elements (added empty by a
// scale-up, below) take no part in the check or the sum.
//
// # The correlated model (the default)
//
// Equation 3 assumes independent filters, but two neighbouring filters
// hold one period's elements in common: filter i was the future while
// filter i+1 was the present. With the same m and hash functions those
// elements set the same bits in both, so with q(x) = 1 - (1-1/m)^(kx) the
// chance that a given bit is set in both is q(s) + (1 - q(s))·q(a)·q(b)
// for s shared and a, b own elements, and the pair errs with that to the
// power k, which can be orders of magnitude above p_i·p_{i+1}. With the
// optimized check the last pair errs only when the oldest filter alone
// does, so that term is dropped. Model Correlated (the default) uses these
// pair terms in EstimatedFPP, sizing and resizing; it matches the measured
// rate for N > 1 where Equation 3 underestimates it (docs/results/fbf.md).
// The FBF tracks, per filter, the insertions it received as the future
// filter; every count follows from those.
//
// Sizing: given the expected insertions per refresh period n and a target
// P, NewWithOptions picks the smallest m (over k = 1..16) for which the
// model's P at the worst point of the steady state (future n, present and
// past 2n each, just before a refresh) meets the target.
//
// # Adaptive resizing (Section III-E, Algorithm 3)
//
// When Adaptive.TargetFPP is set, every Adaptive.Interval of packet time
// (1 s in the paper) the filter computes P and, if P ≥ 0.9·target, doubles
// the number of filters (from N+2 to 2(N+2), the new empty filters joining
// the past end) and shortens t by one step; if P ≤ 0.1·target it removes
// the oldest filter and lengthens t by one step (multiplicative increase,
// additive decrease, as TCP congestion control). Both knobs are bounded
// (MaxFilters, MinRefresh, MaxRefresh) and, when MinWindow is set, never
// shrink the guaranteed window (N+1)·t below it: a deduplicator must keep
// remembering for as long as duplicates can arrive.
//
// The paper compares the current estimate. By the time it crosses the
// threshold, the filters being filled have overfilled, and they stay in
// the window for N+1 periods (longer after a scale-up). Unless
// Adaptive.Current is set, P is instead the model's estimate at its worst
// point until the next refresh: the future filter receiving the last
// interval's insertion rate until then, taken both before and after the
// cascade (when the full present filter becomes a past filter). Measured on
// a tenfold ramp, this keeps the rate under the target where the literal
// algorithm exceeds it several times over (docs/results/fbf.md).
//
// # Concurrency
//
// An FBF is not safe for concurrent use: one goroutine (a flowmon worker)
// owns it. Stats is the exception: it reads a snapshot the owner publishes
// every Adaptive.Interval of packet time (and on Publish), and may be called
// from any goroutine, e.g. at scrape time.
package fbf
