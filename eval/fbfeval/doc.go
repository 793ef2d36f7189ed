// Package fbfeval reproduces Section VI-A to VI-C of Subramanyam, Gupta,
// Leslie and Wang, "Idempotent Distributed Counters Using a Forgetful Bloom
// Filter", on the filters of package fbf: the optimized against the simple
// membership check (VI-A), Equation 3 and the correlated model against the
// measured false-positive rate (VI-B), the rate against the refresh period
// and the number of filters under a growing load, and adaptive resizing by
// Algorithm 3 against a static twin (VI-C).
//
// Time is simulated packet time and every rate is measured on elements
// never inserted, so a run is reproducible from its seed. `flowmon eval
// fbf` runs Run and prints the tables committed as docs/results/fbf.md.
package fbfeval
