// Package scbfeval measures the tightening ratio of package scbf's
// scaling counting Bloom filter (dablooms, sections "Scalable Bloom
// Filters: Solving Scale" and "Enter dablooms"): the overall
// false-positive rate against the configured one, the memory, the number
// of sub-filters and the hashes of the newest, at 1, 10 and 100 times a
// sub-filter's capacity, for r = 0.5 (dablooms' code), 0.8 and 0.9 (its
// README) with scbf's schedule P(1-r)r^i, and for r = 0.9 with dablooms'
// own schedule P·r^(i+1).
//
// Rates are measured on keys never inserted, so a run is reproducible
// from its seed; times are the machine's. `flowmon eval scbf` runs Run
// and prints the table committed as docs/results/scbf.md.
package scbfeval
