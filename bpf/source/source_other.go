//go:build !linux

package source

import (
	"fmt"

	"github.com/flowmon/flowmon/capture"
)

// Ring is an eBPF capture's ring, which only Linux has: on this platform
// Open fails and no Ring is ever made.
type Ring struct{ stats capture.Stats }

var _ capture.LiveSource = (*Ring)(nil)

// Open fails with an error wrapping capture.ErrNotSupported: eBPF is
// Linux's.
func Open(c Config, workers int) ([]*Ring, error) {
	return nil, fmt.Errorf("open %s on %s: eBPF capture is Linux's: %w", c.Hook, c.Iface, capture.ErrNotSupported)
}

func (s *Ring) Next(p *capture.Packet) error { return fmt.Errorf("ebpf: %w", capture.ErrNotSupported) }

func (s *Ring) Stats() *capture.Stats { return &s.stats }

func (s *Ring) SetDecodeOptions(capture.DecodeOptions) {}

func (s *Ring) SetDefragmenter(capture.Defragmenter) {}

func (s *Ring) SetDatagramTaker(capture.DatagramTaker) {}

func (s *Ring) KernelStats() (capture.KernelStats, error) {
	return capture.KernelStats{}, fmt.Errorf("ebpf: %w", capture.ErrNotSupported)
}

func (s *Ring) Counters() (capture.EBPFCounters, error) {
	return capture.EBPFCounters{}, fmt.Errorf("ebpf: %w", capture.ErrNotSupported)
}

func (s *Ring) EBPFStats() (capture.EBPFStats, bool) { return capture.EBPFStats{}, false }

// Sampling says every flow: nothing samples on this platform.
func (s *Ring) Sampling() uint32 { return 1 }

// Attached says nothing: nothing is attached on this platform.
func (s *Ring) Attached() string { return "" }

func (s *Ring) Iface() string { return "" }

func (s *Ring) IfaceState() capture.IfaceState { return capture.IfaceGone }

func (s *Ring) Reopen() error { return fmt.Errorf("ebpf: %w", capture.ErrNotSupported) }

func (s *Ring) Close() error { return nil }
