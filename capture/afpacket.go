package capture

import (
	"errors"
	"fmt"
	"math"
	"os"
	"time"
)

// AF_PACKET capture: the settings (this file, every platform), the socket
// and its ring (afpacket_linux.go), a stub elsewhere (afpacket_other.go).
//
// The source reads a TPACKET_V3 ring through golang.org/x/sys/unix rather
// than gopacket's afpacket package: the ring is read in place, each frame
// decoded straight from the mapped block with no copy and no allocation
// per packet, and the fanout mode and flags, the filter and the kernel's
// statistics are set and read directly.

// AFPacketConfig is one AF_PACKET capture: the ring of each socket and how
// the sockets of several workers share the traffic. Zero fields take the
// defaults of WithDefaults; Validate names the setting of any value out of
// range, by its key in the agent's config file.
type AFPacketConfig struct {
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
	// Filter is a classic BPF program (ParseBPF, or CompileBPF in a build
	// with -tags pcap) attached to every socket (SO_ATTACH_FILTER) before
	// it receives anything; nil keeps every packet. The program sees the
	// frame without its outer VLAN tag, which the kernel has taken out
	// (see AFPacket).
	Filter []SockFilter
}

// The bounds Validate checks.
const (
	afpMinBlockSize  = 4 << 10
	afpMaxBlockSize  = 256 << 20
	afpMaxBlockCount = 1 << 16
	afpMaxRingSize   = 4 << 30
	afpFrameAlign    = 16 // TPACKET_ALIGNMENT
	afpMinFrameSize  = 128
	afpMinTimeout    = time.Millisecond
	afpMaxTimeout    = 10 * time.Second
	afpMaxWorkers    = 256 // PACKET_FANOUT_MAX: sockets in one fanout group
	bpfMaxInsns      = 4096
	maxIfaceName     = 15 // IFNAMSIZ less its NUL
)

// Fanout modes of AFPacketConfig.Fanout.
const (
	FanoutHash = "hash"
	FanoutCPU  = "cpu"
	FanoutLB   = "lb"
)

// WithDefaults returns c with every zero field set to its default.
func (c AFPacketConfig) WithDefaults() AFPacketConfig {
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

// Validate reports every setting of c out of range, each naming its key
// and the range; zero fields count as their defaults.
func (c AFPacketConfig) Validate() error {
	c = c.WithDefaults()
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	switch {
	case c.Iface == "":
		bad("iface: no interface named")
	case len(c.Iface) > maxIfaceName:
		bad("iface %q is %d bytes, more than an interface name's %d", c.Iface, len(c.Iface), maxIfaceName)
	}
	page := os.Getpagesize()
	bs := c.BlockSize
	bsOK := bs >= afpMinBlockSize && bs <= afpMaxBlockSize && bs&(bs-1) == 0 && bs%page == 0
	if !bsOK {
		bad("block-size %d must be a power of two from %d to %d and a multiple of the page size %d",
			bs, afpMinBlockSize, afpMaxBlockSize, page)
	}
	maxRing := int64(afpMaxRingSize)
	if math.MaxInt < maxRing { // a 32-bit platform maps less
		maxRing = math.MaxInt
	}
	switch n := c.BlockCount; {
	case n < 1 || n > afpMaxBlockCount:
		bad("block-count %d must be from 1 to %d", n, afpMaxBlockCount)
	case bsOK && int64(bs)*int64(n) > maxRing:
		bad("block-count %d of block-size %d make a ring of %d bytes: block-size × block-count must be at most %d",
			n, bs, int64(bs)*int64(n), maxRing)
	}
	if fs := c.FrameSize; fs < afpMinFrameSize || fs%afpFrameAlign != 0 || fs > afpMaxBlockSize || (bsOK && fs > bs) {
		most := fmt.Sprint(afpMaxBlockSize)
		if bsOK {
			most = fmt.Sprintf("block-size %d", bs)
		}
		bad("frame-size %d must be a multiple of %d from %d to %s", fs, afpFrameAlign, afpMinFrameSize, most)
	}
	if t := c.BlockTimeout; t < afpMinTimeout || t > afpMaxTimeout {
		bad("block-timeout %v must be from %v to %v", t, afpMinTimeout, afpMaxTimeout)
	}
	switch c.Fanout {
	case FanoutHash, FanoutCPU, FanoutLB:
	default:
		bad("fanout %q must be %s, %s or %s", c.Fanout, FanoutHash, FanoutCPU, FanoutLB)
	}
	if n := len(c.Filter); n > bpfMaxInsns {
		bad("filter of %d instructions: at most %d", n, bpfMaxInsns)
	} else if n > 0 {
		if err := checkBPF(c.Filter); err != nil {
			errs = append(errs, fmt.Errorf("filter: %w", err))
		}
	}
	return errors.Join(errs...)
}

// validWorkers checks OpenAFPacket's worker count.
func validWorkers(workers int) error {
	if workers < 1 || workers > afpMaxWorkers {
		return fmt.Errorf("workers %d must be from 1 to %d (sockets in one fanout group)", workers, afpMaxWorkers)
	}
	return nil
}
