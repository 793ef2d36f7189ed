package capture

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/flowmon/flowmon/conferr"
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
// defaults of WithDefaults when the capture opens; Validate names the
// setting of any value out of range, by its key in the agent's config
// file.
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

// The bounds of AFPacketConfig's settings, which Validate checks; the
// agent's config file is checked against them too.
const (
	AFPacketMinBlockSize  = 4 << 10 // BlockSize, also a whole number of pages
	AFPacketMaxBlockSize  = 256 << 20
	AFPacketMaxBlockCount = 1 << 16
	AFPacketMaxRingSize   = 4 << 30 // BlockSize × BlockCount; on a 32-bit platform, math.MaxInt
	AFPacketFrameAlign    = 16      // TPACKET_ALIGNMENT: FrameSize is a multiple of it
	AFPacketMinFrameSize  = 128
	// MinReadTimeout and MaxReadTimeout bound BlockTimeout, and
	// OpenPcapLive's read timeout.
	MinReadTimeout = time.Millisecond
	MaxReadTimeout = 10 * time.Second
)

const (
	afpMaxWorkers = 256  // PACKET_FANOUT_MAX: sockets in one fanout group
	bpfMaxInsns   = 4096 // BPF_MAXINSNS
)

// Fanout modes of AFPacketConfig.Fanout.
const (
	FanoutHash = "hash" // PACKET_FANOUT_HASH: by flow, both directions to one socket
	FanoutCPU  = "cpu"  // PACKET_FANOUT_CPU: by the CPU that received the packet
	FanoutLB   = "lb"   // PACKET_FANOUT_LB: round robin
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

// Validate reports every setting of c out of range, each a
// *conferr.Error naming its key (as the agent's config file names it in
// its afpacket section: block-size, block-count, frame-size,
// block-timeout, fanout or filter; iface for Iface, the file's top-level
// interface) and saying the value and the range, sizes written as
// FormatSize does, joined (errors.Join); a filter's error wraps ErrBPF.
// It checks c as it is, so a zero field is out of range:
// c.WithDefaults().Validate() checks what OpenAFPacket would open.
func (c AFPacketConfig) Validate() error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, &conferr.Error{Key: key, Msg: fmt.Sprintf(format, a...)})
	}
	if err := checkIface(c.Iface); err != nil {
		errs = append(errs, err)
	}
	page := os.Getpagesize()
	bs := c.BlockSize
	bsOK := bs >= AFPacketMinBlockSize && bs <= AFPacketMaxBlockSize && bs&(bs-1) == 0 && bs%page == 0
	if !bsOK {
		bad("block-size", "%s must be a power of two from %s to %s (a whole number of %d-byte pages)",
			FormatSize(int64(bs)), FormatSize(AFPacketMinBlockSize), FormatSize(AFPacketMaxBlockSize), page)
	}
	maxRing := int64(AFPacketMaxRingSize)
	if math.MaxInt < maxRing { // a 32-bit platform maps less
		maxRing = math.MaxInt
	}
	switch n := c.BlockCount; {
	case n < 1 || n > AFPacketMaxBlockCount:
		bad("block-count", "%d must be between 1 and %d", n, AFPacketMaxBlockCount)
	case bsOK && int64(bs)*int64(n) > maxRing:
		bad("block-count", "%d blocks of %s make a ring of %s: block-size × block-count must be at most %s",
			n, FormatSize(int64(bs)), FormatSize(int64(bs)*int64(n)), FormatSize(maxRing))
	}
	if fs := c.FrameSize; fs < AFPacketMinFrameSize || fs%AFPacketFrameAlign != 0 || fs > AFPacketMaxBlockSize || (bsOK && fs > bs) {
		most := "block-size"
		if bsOK {
			most += " (" + FormatSize(int64(bs)) + ")"
		}
		bad("frame-size", "%s must be a multiple of %d from %d to %s", FormatSize(int64(fs)), AFPacketFrameAlign, AFPacketMinFrameSize, most)
	}
	if t := c.BlockTimeout; t < MinReadTimeout || t > MaxReadTimeout {
		bad("block-timeout", "%v must be between %v and %v", t, MinReadTimeout, MaxReadTimeout)
	}
	switch c.Fanout {
	case FanoutHash, FanoutCPU, FanoutLB:
	default:
		bad("fanout", "%q must be %s, %s or %s", c.Fanout, FanoutHash, FanoutCPU, FanoutLB)
	}
	if n := len(c.Filter); n > bpfMaxInsns {
		errs = append(errs, &conferr.Error{Key: "filter", Msg: fmt.Sprintf("%d instructions, more than %d", n, bpfMaxInsns), Err: ErrBPF})
	} else if n > 0 {
		if err := checkBPF(c.Filter); err != nil {
			errs = append(errs, &conferr.Error{Key: "filter", Msg: err.Error(), Err: err})
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

// FormatSize writes a byte count in the largest binary unit that holds
// it whole ("1MiB", "4KiB"), in bytes otherwise ("3000"), as the agent's
// config file writes sizes and reads them back.
func FormatSize(n int64) string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// checkIface is a live source's iface setting's error, nil when it can
// name an interface.
func checkIface(iface string) error {
	switch {
	case iface == "":
		return &conferr.Error{Key: "iface", Msg: "no interface named"}
	case len(iface) > MaxIfaceName:
		return &conferr.Error{Key: "iface", Msg: fmt.Sprintf("%q is %d bytes, more than an interface name's %d", iface, len(iface), MaxIfaceName)}
	}
	return nil
}
