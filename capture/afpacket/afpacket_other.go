//go:build !linux

package afpacket

import (
	"fmt"

	"github.com/flowmon/flowmon/capture"
)

// Socket is an AF_PACKET socket, which only Linux has: on this platform
// Open fails and no Socket is ever made.
type Socket struct{ stats capture.Stats }

var _ capture.LiveSource = (*Socket)(nil)

// Open fails with an error wrapping capture.ErrNotSupported: AF_PACKET
// is Linux's.
func Open(c Config, workers int) ([]*Socket, error) {
	return nil, fmt.Errorf("open afpacket on %s: AF_PACKET capture is Linux's: %w", c.Iface, capture.ErrNotSupported)
}

func (s *Socket) Next(p *capture.Packet) error {
	return fmt.Errorf("afpacket: %w", capture.ErrNotSupported)
}

func (s *Socket) Stats() *capture.Stats { return &s.stats }

// SetDecodeOptions does nothing: there is no socket to read.
func (s *Socket) SetDecodeOptions(capture.DecodeOptions) {}

func (s *Socket) SetDefragmenter(capture.Defragmenter) {}

func (s *Socket) LinkType() uint16 { return capture.LinkEthernet }

func (s *Socket) KernelStats() (capture.KernelStats, error) {
	return capture.KernelStats{}, fmt.Errorf("afpacket: %w", capture.ErrNotSupported)
}

func (s *Socket) EBPFStats() (capture.EBPFStats, bool) { return capture.EBPFStats{}, false }

func (s *Socket) Iface() string { return "" }

func (s *Socket) IfaceState() capture.IfaceState { return capture.IfaceGone }

func (s *Socket) Reopen() error { return fmt.Errorf("afpacket: %w", capture.ErrNotSupported) }

func (s *Socket) Close() error { return nil }
