package capture

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/flowmon/flowmon/conferr"
)

// eBPF capture: the settings (this file, every platform), the source on
// the program of package bpf (ebpf_linux.go), a stub elsewhere
// (ebpf_other.go).
//
// The program parses each frame in the kernel, at XDP or TC, as Decode
// does, and hands user space one fixed-size record per packet through a
// BPF ring buffer per worker: the record becomes a Packet by copying
// fields, with no decode, and the packet itself is never copied.

// Hooks of EBPFConfig.Hook.
const (
	HookXDP = "xdp" // XDP: ingress only, before the kernel allocates an skb
	HookTC  = "tc"  // TC (TCX): ingress and egress
)

// XDP attach modes of EBPFConfig.XDPMode.
const (
	XDPAuto    = "auto"    // driver mode where the driver has it, else generic
	XDPDriver  = "driver"  // native XDP, or fail
	XDPGeneric = "generic" // the kernel's generic XDP
)

// TC attach modes of EBPFConfig.TCMode.
const (
	TCAuto   = "auto"   // TCX where the kernel has it, else clsact
	TCX      = "tcx"    // TCX links (kernel 6.6 and later), or fail
	TCClsact = "clsact" // bpf filters on a clsact qdisc, the attach older kernels have
)

// EBPFConfig is one eBPF capture. Zero fields take the defaults of
// WithDefaults; Validate names the setting of any value out of range, by
// its key in the agent's config file (its ebpf section).
type EBPFConfig struct {
	Iface string // interface to capture on
	Hook  string // HookXDP or HookTC
	// XDPMode is how the XDP program attaches (XDPAuto by default); the
	// source says which mode it got (EBPF.Attached).
	XDPMode string
	// TCMode is how the TC programs attach (TCAuto by default): TCX
	// links, or a clsact qdisc's filters where the kernel has no TCX.
	// The source says which it got (EBPF.Attached).
	TCMode string
	// RingSize is each worker's ring buffer in bytes: a power of two from
	// a page to 1 GiB. Default 8 MiB (about 50,000 records).
	RingSize int
	// PollTimeout is how long Next waits for records before returning
	// ErrNoPacket; records written meanwhile wait for it unless a quarter
	// of the ring fills first. From 1 ms to 10 s; default 10 ms.
	PollTimeout time.Duration
	// Sample keeps 1 flow in Sample, chosen by the flow hash (both
	// directions of a kept flow, every packet); 0 or 1 keeps every flow.
	Sample uint32
	// Prefixes and Ports are the pre-filter: with prefixes, a packet is
	// kept only if one of its addresses is in one of them; with ports,
	// only if one of its ports is one of them. Empty: no such test.
	Prefixes []netip.Prefix
	Ports    []uint16
}

// Bounds of EBPFConfig's settings.
const (
	EBPFMinRingSize = 4 << 10
	EBPFMaxRingSize = 1 << 30
	EBPFMaxPrefixes = 4096
	ebpfMaxWorkers  = 256
)

// WithDefaults returns c with every zero field set to its default.
func (c EBPFConfig) WithDefaults() EBPFConfig {
	if c.XDPMode == "" {
		c.XDPMode = XDPAuto
	}
	if c.TCMode == "" {
		c.TCMode = TCAuto
	}
	if c.RingSize == 0 {
		c.RingSize = 8 << 20
	}
	if c.PollTimeout == 0 {
		c.PollTimeout = 10 * time.Millisecond
	}
	if c.Sample == 0 {
		c.Sample = 1
	}
	return c
}

// Validate reports every setting of c out of range, each a
// *conferr.Error naming its key, joined (errors.Join).
func (c EBPFConfig) Validate() error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, &conferr.Error{Key: key, Msg: fmt.Sprintf(format, a...)})
	}
	if err := checkIface(c.Iface); err != nil {
		errs = append(errs, err)
	}
	switch c.Hook {
	case HookXDP, HookTC:
	default:
		bad("source", "%q must be %s or %s", c.Hook, HookXDP, HookTC)
	}
	switch c.XDPMode {
	case XDPAuto, XDPDriver, XDPGeneric:
	default:
		bad("xdp-mode", "%q must be %s, %s or %s", c.XDPMode, XDPAuto, XDPDriver, XDPGeneric)
	}
	switch c.TCMode {
	case TCAuto, TCX, TCClsact:
	default:
		bad("tc-mode", "%q must be %s, %s or %s", c.TCMode, TCAuto, TCX, TCClsact)
	}
	if s := c.RingSize; s < EBPFMinRingSize || s > EBPFMaxRingSize || s&(s-1) != 0 {
		bad("ring-size", "%s must be a power of two from %s to %s", FormatSize(int64(s)), FormatSize(EBPFMinRingSize), FormatSize(EBPFMaxRingSize))
	}
	if t := c.PollTimeout; t < MinReadTimeout || t > MaxReadTimeout {
		bad("poll-timeout", "%v must be between %v and %v", t, MinReadTimeout, MaxReadTimeout)
	}
	if c.Sample == 0 {
		bad("sample", "0 must be at least 1 (1 keeps every flow)")
	}
	if n := len(c.Prefixes); n > EBPFMaxPrefixes {
		bad("cidrs", "%d prefixes, more than %d", n, EBPFMaxPrefixes)
	}
	for _, p := range c.Prefixes {
		if !p.IsValid() {
			bad("cidrs", "%v is not a prefix", p)
		}
	}
	return errors.Join(errs...)
}

// EBPFCounters are the eBPF program's counts for one ring (or, added up,
// for all of them), since it loaded.
type EBPFCounters struct {
	Seen        uint64 // packets whose flow hash picked the ring (frames that did not parse: ring 0)
	Emitted     uint64 // records written
	Raw         uint64 // of Emitted: frames handed up whole, for Decode (tunnels, link layers the program leaves to it)
	Lost        uint64 // records lost: the ring was full
	SampledOut  uint64 // packets of flows sampling leaves out
	FilteredOut uint64 // packets the pre-filter leaves out
	// Failures counts the frames that did not parse, by Reason: each gets
	// a record too (unless the ring is full), which Next counts in Stats.
	Failures [numReasons]uint64
}

// Add adds o's counts to c.
func (c *EBPFCounters) Add(o EBPFCounters) {
	c.Seen += o.Seen
	c.Emitted += o.Emitted
	c.Raw += o.Raw
	c.Lost += o.Lost
	c.SampledOut += o.SampledOut
	c.FilteredOut += o.FilteredOut
	for r := range c.Failures {
		c.Failures[r] += o.Failures[r]
	}
}

// FailureCounts returns the parse failures by reason name, every reason
// a key.
func (c *EBPFCounters) FailureCounts() map[string]uint64 {
	m := make(map[string]uint64, numReasons-1)
	for _, r := range Reasons() {
		m[r.String()] = c.Failures[r]
	}
	return m
}

func validEBPFWorkers(workers int) error {
	if workers < 1 || workers > ebpfMaxWorkers {
		return fmt.Errorf("workers %d must be from 1 to %d (one ring buffer each)", workers, ebpfMaxWorkers)
	}
	return nil
}
