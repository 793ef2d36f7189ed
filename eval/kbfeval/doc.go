// Package kbfeval reproduces Section V, the evaluation, of Xiong, Yao, Cao
// and He, "kBF: a Bloom Filter for Key-Value Storage with an Application on
// Approximate State Machines" (INFOCOM 2014), on the filters of package kbf:
// false negatives, incorrect outputs and false positives of both encoders
// (Greedy, Sidon) and both layouts (standard, blocked) at sizes m and m/2
// for p from 1e-3 to 1e-6, and the false positives after batches of deletes
// (the paper's Fig. 9, 10) and false negatives after batches of updates
// (Fig. 11, 12). Keys are hashes of byte strings whose sizes follow the
// paper's GEV distribution (Section V-B). Each rate is also measured with
// the paper's decoding rules as printed (kbf's QueryPaper).
//
// `flowmon eval kbf` runs Section5 and prints the table committed as
// docs/results/kbf.md. Section VI of the paper (the TCP flow analysis) is
// package eval/acsmeval.
package kbfeval
