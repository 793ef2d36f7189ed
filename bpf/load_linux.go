//go:build linux

package bpf

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

// Record is one packet as the program writes it into a ring: the Go type
// bpf2go generates from the C struct record's BTF.
type Record = flowmonRecord

// Counters are the program's counts for one ring, summed over the CPUs.
type Counters = flowmonCounters

// Sizes the program and its readers share.
const (
	MaxRings    = 256 // rings (worker shards) at most
	PayloadMax  = 64  // payload bytes a record carries at most
	NumReasons  = 16  // entries of Counters.Reasons
	RecordSize  = int(unsafe.Sizeof(Record{}))
	MaxPrefixes = 4096 // CIDRs the pre-filter holds at most
	// RawMax is the most of a frame the program hands up whole (a record
	// of reason ReasonRaw, the frame's first bytes after it).
	RawMax = 2048
	// ReasonRaw is Record.Reason of a frame handed up whole: a tunnel,
	// which user space decodes.
	// Record.PayloadLen is then the number of the frame's bytes that
	// follow the record.
	ReasonRaw = 0xff
)

// Record.Flags bits.
const (
	FlagReversed = 1 << 0 // the packet went from the key's Dst to its Src
	FlagHasTCP   = 1 << 1 // Seq, Ack, TcpFlags and Window are a TCP header's
	FlagEgress   = 1 << 2 // seen leaving the interface (TC egress)
)

// Pre-filter bits of the settings map.
const (
	filterCIDRs = 1 << 0
	filterPorts = 1 << 1
)

// Options size a Load.
type Options struct {
	// Rings is the number of ring buffers, one per reader: 1 to MaxRings.
	Rings int
	// RingSize is each ring's size in bytes: a power of two and a whole
	// number of pages.
	RingSize int
	// WakeupBytes is how much a ring holds before the program wakes its
	// reader; below it the reader finds the records when its poll times
	// out. 0 takes RingSize/4.
	WakeupBytes int
}

// Check says what is wrong with o, naming each setting.
func (o Options) Check() error {
	var errs []error
	if o.Rings < 1 || o.Rings > MaxRings {
		errs = append(errs, fmt.Errorf("rings %d must be from 1 to %d", o.Rings, MaxRings))
	}
	page := os.Getpagesize()
	if s := o.RingSize; s < page || s&(s-1) != 0 || s > 1<<30 {
		errs = append(errs, fmt.Errorf("ring size %d must be a power of two from %d (a page) to %d", s, page, 1<<30))
	}
	if o.WakeupBytes < 0 || o.WakeupBytes > o.RingSize {
		errs = append(errs, fmt.Errorf("wakeup bytes %d must be from 0 to the ring size %d", o.WakeupBytes, o.RingSize))
	}
	return errors.Join(errs...)
}

// Objects is the loaded program, its maps and the links that attach it.
// Its methods are safe for concurrent use.
type Objects struct {
	objs  flowmonObjects
	rings []*ebpf.Map

	mu    sync.Mutex // guards cfg
	cfg   flowmonConfig
	hooks hooks // where the program is attached
}

// errPerm adds what the kernel wants to an EPERM.
func errPerm(err error) error {
	if errors.Is(err, unix.EPERM) {
		return fmt.Errorf("%w (needs CAP_BPF and CAP_NET_ADMIN, or root)", err)
	}
	return err
}

// Load loads the program and its maps into the kernel, attached nowhere
// yet. Close releases them.
func Load(opt Options) (*Objects, error) {
	if opt.WakeupBytes == 0 {
		opt.WakeupBytes = opt.RingSize / 4
	}
	if err := opt.Check(); err != nil {
		return nil, fmt.Errorf("load eBPF capture: %w", err)
	}
	// Kernels before 5.11 charge BPF memory to RLIMIT_MEMLOCK; later ones
	// to the cgroup, and this does nothing.
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("load eBPF capture: %w", errPerm(err))
	}
	spec, err := loadFlowmon()
	if err != nil {
		return nil, fmt.Errorf("load eBPF capture: read the object: %w", err)
	}
	o := &Objects{}
	outer := spec.Maps["rings"]
	outer.MaxEntries = uint32(opt.Rings)
	inner := outer.InnerMap.Copy()
	inner.MaxEntries = uint32(opt.RingSize)
	outer.InnerMap = inner
	spec.Maps["stats"].MaxEntries = uint32(opt.Rings)
	for i := range opt.Rings {
		m, err := ebpf.NewMap(inner)
		if err != nil {
			o.Close()
			return nil, fmt.Errorf("load eBPF capture: make ring %d of %d bytes: %w", i, opt.RingSize, errPerm(err))
		}
		o.rings = append(o.rings, m)
		outer.Contents = append(outer.Contents, ebpf.MapKV{Key: uint32(i), Value: m})
	}
	if err := spec.LoadAndAssign(&o.objs, nil); err != nil {
		o.Close()
		return nil, fmt.Errorf("load eBPF capture: %w", errPerm(err))
	}
	o.cfg = flowmonConfig{Rings: uint32(opt.Rings), Sample: 1, WakeupBytes: uint32(opt.WakeupBytes)}
	if err := o.putConfig(); err != nil {
		o.Close()
		return nil, err
	}
	return o, nil
}

func (o *Objects) putConfig() error {
	if err := o.objs.Settings.Put(uint32(0), o.cfg); err != nil {
		return fmt.Errorf("set the eBPF capture's settings: %w", err)
	}
	return nil
}

// Rings returns the number of rings.
func (o *Objects) Rings() int { return len(o.rings) }

// NewReader opens a reader of ring i.
func (o *Objects) NewReader(i int) (*ringbuf.Reader, error) {
	if i < 0 || i >= len(o.rings) {
		return nil, fmt.Errorf("ring %d of %d", i, len(o.rings))
	}
	r, err := ringbuf.NewReader(o.rings[i])
	if err != nil {
		return nil, fmt.Errorf("read ring %d: %w", i, err)
	}
	return r, nil
}

// Counters returns ring i's counts, summed over the CPUs.
func (o *Objects) Counters(i int) (Counters, error) {
	var per []flowmonCounters
	if err := o.objs.Stats.Lookup(uint32(i), &per); err != nil {
		return Counters{}, fmt.Errorf("read the eBPF capture's counters of ring %d: %w", i, err)
	}
	var c Counters
	for _, p := range per {
		c.Seen += p.Seen
		c.Emitted += p.Emitted
		c.Raw += p.Raw
		c.Lost += p.Lost
		c.SampledOut += p.SampledOut
		c.FilteredOut += p.FilteredOut
		for r := range c.Reasons {
			c.Reasons[r] += p.Reasons[r]
		}
	}
	return c, nil
}

// SetTunnels sets the UDP tunnels (VXLAN, Geneve, GTP-U, Teredo, AYIYA,
// GRE over UDP) whose frames the program hands up whole, for user space
// to decapsulate, as it does GRE and IP in IP. Until it is called, no
// UDP datagram is one.
func (o *Objects) SetTunnels(t Tunnels) error {
	pb := flowmonPortBits{Detect: t.detect()}
	for _, port := range t.Ports {
		pb.W[port>>6] |= 1 << (port & 63)
	}
	if err := o.objs.TunnelPorts.Put(uint32(0), &pb); err != nil {
		return fmt.Errorf("set the eBPF capture's tunnels: %w", err)
	}
	return nil
}

// SetSampling keeps 1 flow in n (all of its packets, both directions);
// n of 0 or 1 keeps every flow.
func (o *Objects) SetSampling(n uint32) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cfg.Sample = n
	return o.putConfig()
}

// SetFilter sets the pre-filter: with prefixes, a packet is kept only if
// one of its addresses is in one of them; with ports, only if one of its
// ports is one of them (for ICMP the type and code, as capture.Key sets
// them). Empty sets leave that test out; two empty sets keep every packet.
func (o *Objects) SetFilter(prefixes []netip.Prefix, ports []uint16) error {
	if len(prefixes) > MaxPrefixes {
		return fmt.Errorf("set the eBPF pre-filter: %d prefixes, more than %d", len(prefixes), MaxPrefixes)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	// Stop filtering while the sets change, so no packet meets half a set.
	o.cfg.Filter = 0
	if err := o.putConfig(); err != nil {
		return err
	}
	var k flowmonLpmKey
	var keys []flowmonLpmKey
	it := o.objs.Cidrs.Iterate()
	var v uint8
	for it.Next(&k, &v) {
		keys = append(keys, k)
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("set the eBPF pre-filter: list the prefixes: %w", err)
	}
	for _, k := range keys {
		if err := o.objs.Cidrs.Delete(k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("set the eBPF pre-filter: delete a prefix: %w", err)
		}
	}
	for _, p := range prefixes {
		p = p.Masked()
		bits := p.Bits()
		if p.Addr().Is4() {
			bits += 96
		}
		k := flowmonLpmKey{Prefixlen: uint32(bits), Addr: p.Addr().As16()}
		if err := o.objs.Cidrs.Put(k, uint8(1)); err != nil {
			return fmt.Errorf("set the eBPF pre-filter: add %s: %w", p, err)
		}
	}
	var pb flowmonPortBits
	for _, port := range ports {
		pb.W[port>>6] |= 1 << (port & 63)
	}
	if err := o.objs.Ports.Put(uint32(0), &pb); err != nil {
		return fmt.Errorf("set the eBPF pre-filter: ports: %w", err)
	}
	if len(prefixes) > 0 {
		o.cfg.Filter |= filterCIDRs
	}
	if len(ports) > 0 {
		o.cfg.Filter |= filterPorts
	}
	return o.putConfig()
}

// XDP modes.
const (
	XDPAuto    = "auto"    // the driver's own mode where it has one, else generic
	XDPDriver  = "driver"  // native XDP in the driver, or fail
	XDPGeneric = "generic" // the kernel's generic (skb) XDP
)

// AttachXDP attaches the program at XDP on the interface with index
// ifindex, in mode (XDPAuto, XDPDriver or XDPGeneric), and returns the
// mode it got.
func (o *Objects) AttachXDP(ifindex int, mode string) (string, error) {
	return o.hooks.attachXDP(o.objs.FlowmonXdp, ifindex, mode)
}

// TC attach modes.
const (
	TCAuto   = "auto"   // TCX where the kernel has it, else clsact
	TCX      = "tcx"    // TCX links (kernel 6.6 and later), or fail
	TCClsact = "clsact" // bpf filters on a clsact qdisc, the attach before TCX
)

// AttachTC attaches the program at TC ingress and egress of the interface
// with index ifindex, in mode (TCAuto, TCX or TCClsact), and returns the
// mode it got. TCAuto takes TCX unless cilium/ebpf finds the kernel
// without it (ebpf.ErrNotSupported), and then a clsact qdisc's filters
// (clsact_linux.go); any other failure of TCX is the error.
func (o *Objects) AttachTC(ifindex int, mode string) (string, error) {
	return o.hooks.attachTC(tcProgs{ingress: o.objs.FlowmonTcIngress, egress: o.objs.FlowmonTcEgress,
		ingressName: "flowmon_tc_ingress", egressName: "flowmon_tc_egress"}, ifindex, mode)
}

// XDPProgram, TCIngressProgram and TCEgressProgram are the loaded
// programs, for tests and benchmarks (Program.Run, Program.Benchmark).
func (o *Objects) XDPProgram() *ebpf.Program       { return o.objs.FlowmonXdp }
func (o *Objects) TCIngressProgram() *ebpf.Program { return o.objs.FlowmonTcIngress }
func (o *Objects) TCEgressProgram() *ebpf.Program  { return o.objs.FlowmonTcEgress }

// Detach removes the program from every hook it is attached to.
func (o *Objects) Detach() error { return o.hooks.detach() }

// Close detaches the program and releases it and its maps. XDP and TCX
// links are bpf_links owned by this process and nothing is pinned, so the
// kernel detaches them also when the process dies without calling Close;
// clsact filters stay until deleted (clsact_linux.go).
func (o *Objects) Close() error {
	errs := []error{o.Detach(), o.objs.Close()}
	for _, m := range o.rings {
		errs = append(errs, m.Close())
	}
	o.rings = nil
	return errors.Join(errs...)
}
