package afpacket

import (
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/conferr"
)

// Config is one AF_PACKET capture: the ring of each socket and how
// the sockets of several workers share the traffic. Zero fields take the
// defaults of WithDefaults when the capture opens; Validate names the
// setting of any value out of range, by its key in the agent's config
// file.
type Config struct {
	Iface string // interface to capture on
	// BlockSize is the size of one ring block in bytes: a power of two
	// and a multiple of the page size, from 4 KiB to 256 MiB. Default 1 MiB.
	BlockSize int
	// BlockCount is the number of blocks of each socket's ring, 1 to
	// 65536, and BlockSize × BlockCount at most 4 GiB (2 GiB on a 32-bit
	// platform). Default 64.
	BlockCount int
	// FrameSize is the kernel's nominal frame size: a multiple of 16
	// (TPACKET_ALIGNMENT) from 128 to BlockSize. A TPACKET_V3 ring packs
	// frames of any size into its blocks, so it bounds nothing but the
	// kernel's frame count. Default 2048.
	FrameSize int
	// BlockTimeout is how long the kernel lets a block that holds packets
	// wait before handing it over part full (retire_blk_tov), from 1 ms
	// to 10 s, in whole milliseconds (a finer part is dropped). It is
	// also Next's poll timeout. Default 10 ms.
	BlockTimeout time.Duration
	// Fanout is how the sockets of several workers share the packets:
	// "hash" (default) by flow, both directions to one socket, with IPv4
	// fragments reassembled first (PACKET_FANOUT_FLAG_DEFRAG); "cpu" by
	// the CPU that received the packet; "lb" round robin. Only "hash"
	// keeps a flow on one socket.
	Fanout string
	// FanoutGroup is the fanout group id; 0 has the kernel pick one that
	// no other group in the network namespace uses
	// (PACKET_FANOUT_FLAG_UNIQUEID).
	FanoutGroup uint16
	Promisc     bool // put the interface in promiscuous mode while the sockets are open
	// Filter is a classic BPF program (capture.ParseBPF, or
	// pcaplive.CompileBPF in a build with -tags pcap) attached to every
	// socket (SO_ATTACH_FILTER) before it receives anything; nil keeps
	// every packet. The program sees the frame without its outer VLAN
	// tag, which the kernel has taken out (see Socket).
	Filter []capture.SockFilter
}

// The bounds of Config's settings, which Validate checks; the agent's
// config file is checked against them too. BlockTimeout is bounded by
// capture.MinReadTimeout and capture.MaxReadTimeout.
const (
	MinBlockSize  = 4 << 10 // BlockSize, also a whole number of pages
	MaxBlockSize  = 256 << 20
	MaxBlockCount = 1 << 16
	MaxRingSize   = 4 << 30 // BlockSize × BlockCount; on a 32-bit platform, math.MaxInt
	FrameAlign    = 16      // TPACKET_ALIGNMENT: FrameSize is a multiple of it
	MinFrameSize  = 128
	MaxWorkers    = 256 // PACKET_FANOUT_MAX: sockets in one fanout group
)

// Fanout modes of Config.Fanout.
const (
	FanoutHash = "hash" // PACKET_FANOUT_HASH: by flow, both directions to one socket
	FanoutCPU  = "cpu"  // PACKET_FANOUT_CPU: by the CPU that received the packet
	FanoutLB   = "lb"   // PACKET_FANOUT_LB: round robin
)

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.BlockSize == 0 {
		c.BlockSize = 1 << 20
	}
	if c.BlockCount == 0 {
		c.BlockCount = 64
	}
	if c.FrameSize == 0 {
		c.FrameSize = 2048
	}
	if c.BlockTimeout == 0 {
		c.BlockTimeout = 10 * time.Millisecond
	}
	if c.Fanout == "" {
		c.Fanout = FanoutHash
	}
	return c
}

// Validate reports every setting of c out of range, each a
// *conferr.Error naming its key, the value and the range, joined
// (errors.Join). It checks c as it is, so a zero field is out of range:
// c.WithDefaults().Validate() checks what Open would open.
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, &conferr.Error{Key: key, Msg: fmt.Sprintf(format, a...)})
	}
	if err := capture.CheckIface(c.Iface); err != nil {
		errs = append(errs, err)
	}
	page := os.Getpagesize()
	bs := c.BlockSize
	bsOK := bs >= MinBlockSize && bs <= MaxBlockSize && bs&(bs-1) == 0 && bs%page == 0
	if !bsOK {
		bad("block-size", "%s must be a power of two from %s to %s (a whole number of %d-byte pages)",
			capture.FormatSize(int64(bs)), capture.FormatSize(MinBlockSize), capture.FormatSize(MaxBlockSize), page)
	}
	maxRing := int64(MaxRingSize)
	if math.MaxInt < maxRing { // a 32-bit platform maps less
		maxRing = math.MaxInt
	}
	switch n := c.BlockCount; {
	case n < 1 || n > MaxBlockCount:
		bad("block-count", "%d must be between 1 and %d", n, MaxBlockCount)
	case bsOK && int64(bs)*int64(n) > maxRing:
		bad("block-count", "%d blocks of %s make a ring of %s: block-size × block-count must be at most %s",
			n, capture.FormatSize(int64(bs)), capture.FormatSize(int64(bs)*int64(n)), capture.FormatSize(maxRing))
	}
	if fs := c.FrameSize; fs < MinFrameSize || fs%FrameAlign != 0 || fs > MaxBlockSize || (bsOK && fs > bs) {
		most := "block-size"
		if bsOK {
			most += " (" + capture.FormatSize(int64(bs)) + ")"
		}
		bad("frame-size", "%s must be a multiple of %d from %d to %s", capture.FormatSize(int64(fs)), FrameAlign, MinFrameSize, most)
	}
	if t := c.BlockTimeout; t < capture.MinReadTimeout || t > capture.MaxReadTimeout {
		bad("block-timeout", "%v must be between %v and %v", t, capture.MinReadTimeout, capture.MaxReadTimeout)
	}
	switch c.Fanout {
	case FanoutHash, FanoutCPU, FanoutLB:
	default:
		bad("fanout", "%q must be %s, %s or %s", c.Fanout, FanoutHash, FanoutCPU, FanoutLB)
	}
	if n := len(c.Filter); n > capture.MaxBPFInsns {
		errs = append(errs, &conferr.Error{Key: "filter", Msg: fmt.Sprintf("%d instructions, more than %d", n, capture.MaxBPFInsns), Err: capture.ErrBPF})
	} else if n > 0 {
		if err := capture.CheckBPF(c.Filter); err != nil {
			errs = append(errs, &conferr.Error{Key: "filter", Msg: err.Error(), Err: err})
		}
	}
	return errors.Join(errs...)
}

// validWorkers checks Open's worker count.
func validWorkers(workers int) error {
	if workers < 1 || workers > MaxWorkers {
		return fmt.Errorf("workers %d must be from 1 to %d (sockets in one fanout group)", workers, MaxWorkers)
	}
	return nil
}
