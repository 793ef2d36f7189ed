// Package bpf will hold flowmon's eBPF programs (XDP and TC capture into a
// ring buffer) and their committed bpf2go output. The flow key layout they
// share with user space is capture.Key's 40-byte binary layout.
//
// Empty for now: live capture is a later issue.
package bpf
