//go:build !linux

package capture

import "fmt"

// SockFilter is one classic BPF instruction, laid out as Linux's struct
// sock_filter (golang.org/x/sys/unix.SockFilter on Linux).
type SockFilter struct {
	Code uint16
	Jt   uint8
	Jf   uint8
	K    uint32
}

// AFPacket is an AF_PACKET socket, which only Linux has: on this platform
// OpenAFPacket fails and no AFPacket is ever made.
type AFPacket struct{ stats Stats }

var _ Source = (*AFPacket)(nil)

// OpenAFPacket fails with an error wrapping ErrNotSupported: AF_PACKET is
// Linux's.
func OpenAFPacket(c AFPacketConfig, workers int) ([]*AFPacket, error) {
	return nil, fmt.Errorf("open afpacket on %s: AF_PACKET capture is Linux's: %w", c.Iface, ErrNotSupported)
}

func (s *AFPacket) Next(p *Packet) error { return fmt.Errorf("afpacket: %w", ErrNotSupported) }

func (s *AFPacket) Stats() *Stats { return &s.stats }

// SetDecodeOptions does nothing: there is no socket to read.
func (s *AFPacket) SetDecodeOptions(DecodeOptions) {}

func (s *AFPacket) SetDefragmenter(Defragmenter) {}

func (s *AFPacket) LinkType() uint16 { return LinkEthernet }

func (s *AFPacket) KernelStats() (KernelStats, error) {
	return KernelStats{}, fmt.Errorf("afpacket: %w", ErrNotSupported)
}

func (s *AFPacket) Close() error { return nil }
