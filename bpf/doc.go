// Package bpf will hold flowmon's eBPF programs (XDP and TC capture into a
// ring buffer) and their committed bpf2go output. The flow key layout they
// share with user space is capture.Key's 40-byte binary layout.
//
// It holds no program yet: live capture goes through AF_PACKET or libpcap
// (package capture).
package bpf
