//go:build linux

// Package bpftest gives tests of the eBPF capture (package bpf, the
// capture source, flowmon run --source xdp|tc) their skip: a test runs
// for real as root and skips, naming what is missing, only when the
// process lacks the privilege or the kernel lacks a feature the program
// needs, as cilium/ebpf's features package finds it.
//
// The package is Linux's; elsewhere it is empty.
package bpftest

import (
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
)

// Require skips t unless the process is root and the kernel has what the
// capture program uses: XDP and TC programs, ring buffers, arrays of
// maps, per-CPU arrays and LPM tries, bounded loops.
func Require(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("loading eBPF programs needs root (CAP_BPF and CAP_NET_ADMIN)")
	}
	for _, c := range []struct {
		what string
		err  error
	}{
		{"XDP programs", features.HaveProgramType(ebpf.XDP)},
		{"TC (sched_cls) programs", features.HaveProgramType(ebpf.SchedCLS)},
		{"BPF ring buffers", features.HaveMapType(ebpf.RingBuf)},
		{"arrays of maps", features.HaveMapType(ebpf.ArrayOfMaps)},
		{"per-CPU arrays", features.HaveMapType(ebpf.PerCPUArray)},
		{"LPM tries", features.HaveMapType(ebpf.LPMTrie)},
		{"bounded loops", features.HaveBoundedLoops()},
	} {
		if errors.Is(c.err, ebpf.ErrNotSupported) {
			t.Skipf("the kernel lacks %s: %v", c.what, c.err)
		}
		if c.err != nil {
			t.Fatalf("probe for %s: %v", c.what, c.err)
		}
	}
}
