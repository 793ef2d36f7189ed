package source

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/conferr"
)

// Hooks of Config.Hook.
const (
	HookXDP = "xdp" // XDP: ingress only, before the kernel allocates an skb
	HookTC  = "tc"  // TC (TCX): ingress and egress
)

// XDP attach modes of Config.XDPMode.
const (
	XDPAuto    = "auto"    // driver mode where the driver has it, else generic
	XDPDriver  = "driver"  // native XDP, or fail
	XDPGeneric = "generic" // the kernel's generic XDP
)

// TC attach modes of Config.TCMode.
const (
	TCAuto   = "auto"   // TCX where the kernel has it, else clsact
	TCX      = "tcx"    // TCX links (kernel 6.6 and later), or fail
	TCClsact = "clsact" // bpf filters on a clsact qdisc, the attach older kernels have
)

// Config is one eBPF capture. Zero fields take the defaults of
// WithDefaults; Validate names the setting of any value out of range, by
// its key in the agent's config file (its ebpf section).
type Config struct {
	Iface string // interface to capture on
	Hook  string // HookXDP or HookTC
	// XDPMode is how the XDP program attaches (XDPAuto by default); the
	// source says which mode it got (Ring.Attached).
	XDPMode string
	// TCMode is how the TC programs attach (TCAuto by default): TCX
	// links, or a clsact qdisc's filters where the kernel has no TCX.
	// The source says which it got (Ring.Attached).
	TCMode string
	// RingSize is each worker's ring buffer in bytes: a power of two from
	// a page to 1 GiB. Default 8 MiB (about 50,000 records).
	RingSize int
	// PollTimeout is how long Next waits for records before returning
	// capture.ErrNoPacket; records written meanwhile wait for it unless a
	// quarter of the ring fills first. From 1 ms to 10 s; default 10 ms.
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

// Bounds of Config's settings, and of Open's workers (one ring each).
// PollTimeout is bounded by capture.MinReadTimeout and
// capture.MaxReadTimeout.
const (
	MinRingSize = 4 << 10
	MaxRingSize = 1 << 30
	MaxPrefixes = 4096
	MaxWorkers  = 256
)

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
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
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, &conferr.Error{Key: key, Msg: fmt.Sprintf(format, a...)})
	}
	if err := capture.CheckIface(c.Iface); err != nil {
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
	if s := c.RingSize; s < MinRingSize || s > MaxRingSize || s&(s-1) != 0 {
		bad("ring-size", "%s must be a power of two from %s to %s", capture.FormatSize(int64(s)), capture.FormatSize(MinRingSize), capture.FormatSize(MaxRingSize))
	}
	if t := c.PollTimeout; t < capture.MinReadTimeout || t > capture.MaxReadTimeout {
		bad("poll-timeout", "%v must be between %v and %v", t, capture.MinReadTimeout, capture.MaxReadTimeout)
	}
	if c.Sample == 0 {
		bad("sample", "0 must be at least 1 (1 keeps every flow)")
	}
	if n := len(c.Prefixes); n > MaxPrefixes {
		bad("cidrs", "%d prefixes, more than %d", n, MaxPrefixes)
	}
	for _, p := range c.Prefixes {
		if !p.IsValid() {
			bad("cidrs", "%v is not a prefix", p)
		}
	}
	return errors.Join(errs...)
}

func validWorkers(workers int) error {
	if workers < 1 || workers > MaxWorkers {
		return fmt.Errorf("workers %d must be from 1 to %d (one ring buffer each)", workers, MaxWorkers)
	}
	return nil
}
