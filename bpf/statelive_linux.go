//go:build linux

package bpf

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
)

// A live flow state (StateOptions.Live) runs at XDP, or at TC ingress
// and egress (include/statelive.h): every frame goes through its flow's
// cell at the kernel's monotonic clock (bpf_ktime_get_ns), and the
// frames the cells leave to user space (StateCounters.Whole, Skipped and
// Reasons: tunnels, fragments, what the program does not parse) go up
// whole through one frames ring, each as capture.c hands a tunnel up: a
// Record of reason ReasonRaw and the frame's first bytes.

// FrameCounters are the live programs' counts of the frames left to user
// space, summed over the CPUs: Handed up through the frames ring, or Lost
// to it full.
type FrameCounters struct {
	Handed, Lost uint64
}

// AttachXDP attaches the live program at XDP on the interface with index
// ifindex, in mode (XDPAuto, XDPDriver or XDPGeneric), and returns the
// mode it got.
func (s *State) AttachXDP(ifindex int, mode string) (string, error) {
	if s.objs.FlowmonStateXdp == nil {
		return "", fmt.Errorf("attach the eBPF flow state at XDP: not loaded live")
	}
	return s.hooks.attachXDP(s.objs.FlowmonStateXdp, ifindex, mode)
}

// AttachTC attaches the live programs at TC ingress and egress of the
// interface with index ifindex, in mode (TCAuto, TCX or TCClsact), as
// Objects.AttachTC does, and returns the mode it got.
func (s *State) AttachTC(ifindex int, mode string) (string, error) {
	if s.objs.FlowmonStateTcIngress == nil {
		return "", fmt.Errorf("attach the eBPF flow state at TC: not loaded live")
	}
	return s.hooks.attachTC(tcProgs{ingress: s.objs.FlowmonStateTcIngress, egress: s.objs.FlowmonStateTcEgress,
		ingressName: "flowmon_state_tc_ingress", egressName: "flowmon_state_tc_egress"}, ifindex, mode)
}

// Detach removes the live programs from every hook they are attached to.
func (s *State) Detach() error { return s.hooks.detach() }

// NewFrameReader opens a reader of the frames the live programs hand up.
func (s *State) NewFrameReader() (*ringbuf.Reader, error) {
	r, err := ringbuf.NewReader(s.objs.Frames)
	if err != nil {
		return nil, fmt.Errorf("read the eBPF flow state's frames: %w", err)
	}
	return r, nil
}

// FrameCounters returns the counts of the frames handed up.
func (s *State) FrameCounters() (FrameCounters, error) {
	var per []flowstateFrameCounters
	if err := s.objs.FrameStats.Lookup(uint32(0), &per); err != nil {
		return FrameCounters{}, fmt.Errorf("read the eBPF flow state's frame counters: %w", err)
	}
	var c FrameCounters
	for _, p := range per {
		c.Handed += p.Handed
		c.Lost += p.Lost
	}
	return c, nil
}

// XDPProgram, TCIngressProgram and TCEgressProgram are the live
// programs (nil unless loaded live), for tests and benchmarks
// (Program.Run, Program.Benchmark).
func (s *State) XDPProgram() *ebpf.Program       { return s.objs.FlowmonStateXdp }
func (s *State) TCIngressProgram() *ebpf.Program { return s.objs.FlowmonStateTcIngress }
func (s *State) TCEgressProgram() *ebpf.Program  { return s.objs.FlowmonStateTcEgress }
