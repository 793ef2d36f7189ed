//go:build !linux

package capture

import "fmt"

// EBPF is an eBPF capture, which only Linux has: on this platform
// OpenEBPF fails and no EBPF is ever made.
type EBPF struct{ stats Stats }

var _ Source = (*EBPF)(nil)

// OpenEBPF fails with an error wrapping ErrNotSupported: eBPF is Linux's.
func OpenEBPF(c EBPFConfig, workers int) ([]*EBPF, error) {
	return nil, fmt.Errorf("open %s on %s: eBPF capture is Linux's: %w", c.Hook, c.Iface, ErrNotSupported)
}

func (s *EBPF) Next(p *Packet) error { return fmt.Errorf("ebpf: %w", ErrNotSupported) }

func (s *EBPF) Stats() *Stats { return &s.stats }

func (s *EBPF) KernelStats() (KernelStats, error) {
	return KernelStats{}, fmt.Errorf("ebpf: %w", ErrNotSupported)
}

func (s *EBPF) Counters() (EBPFCounters, error) {
	return EBPFCounters{}, fmt.Errorf("ebpf: %w", ErrNotSupported)
}

// Sampling says every flow: nothing samples on this platform.
func (s *EBPF) Sampling() uint32 { return 1 }

// Attached says nothing: nothing is attached on this platform.
func (s *EBPF) Attached() string { return "" }

func (s *EBPF) Close() error { return nil }
