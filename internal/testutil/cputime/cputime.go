// Package cputime reads the calling thread's CPU clock, for benchmarks on
// a shared machine: memory stalls count, time the thread spent
// descheduled does not. The benchmarks of kbf, acsm, ccf and flowcount
// report it beside wall time.
package cputime
