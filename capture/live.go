package capture

import (
	"errors"
	"fmt"
)

// What the live sources share: the LiveSource interface each implements
// (AF_PACKET in capture/afpacket, libpcap in capture/pcaplive, the eBPF
// program's rings in bpf/source), their errors and counts.

// Bounds every live source shares.
const (
	MaxIfaceName = 15     // IFNAMSIZ less its NUL
	MinSnaplen   = 96     // the headers of a tunnelled TCP packet
	MaxSnaplen   = 262144 // libpcap's largest
)

// ErrNoPacket is returned by a live source's Next when no packet arrived
// within its poll timeout. It is not an end: the caller flushes what it
// has batched, checks whether it should stop, and calls Next again.
var ErrNoPacket = errors.New("no packet within the poll timeout")

// ErrNotSupported is wrapped by the errors of sources this build or
// platform does not have (AF_PACKET and eBPF off Linux, libpcap without
// -tags pcap).
var ErrNotSupported = errors.New("not supported")

// KernelStats are the counts the kernel (or libpcap) keeps for a live
// source, totals since the source was opened.
type KernelStats struct {
	// Packets is every packet that passed the socket's filter, dropped
	// or not: the kernel adds Drops to it (AF_PACKET), and libpcap's
	// ps_recv counts the same way on Linux. Packets - Drops reached the
	// ring.
	Packets uint64
	// Drops are packets lost because the ring (or libpcap's buffer) was
	// full.
	Drops uint64
	// FreezeQueue counts the times a TPACKET_V3 ring filled up and the
	// kernel froze it until a block was returned (AF_PACKET only).
	FreezeQueue uint64
	// IfDrops are packets the interface or its driver dropped (libpcap's
	// ps_ifdrop; 0 for AF_PACKET, which cannot see them).
	IfDrops uint64
}

// Add adds o's counts to k.
func (k *KernelStats) Add(o KernelStats) {
	k.Packets += o.Packets
	k.Drops += o.Drops
	k.FreezeQueue += o.FreezeQueue
	k.IfDrops += o.IfDrops
}

// A live source's interface can go down (ip link set IFACE down), or away
// (ip link del IFACE, a USB NIC pulled, a container's veth removed) and
// come back under the same name with a new index. What each source sees
// (linux/net/packet/af_packet.c's packet_notifier; libpcap 1.10's
// pcap-linux.c; the eBPF hooks):
//
//   - AF_PACKET, set down: the kernel unhooks the socket, sets its error
//     to ENETDOWN and wakes it (poll gives POLLERR until SO_ERROR is
//     read); the socket stays bound to the index and the kernel hooks it
//     again when the interface comes up: nothing to reopen.
//   - AF_PACKET, deleted: the same ENETDOWN, and the socket is unbound
//     (its index -1): it never sees an interface made again with the same
//     name, and its fanout group stays tied to the deleted device, so a
//     new socket can join a group of that id only once every old one has
//     closed.
//   - libpcap, set down: nothing; reads time out as on a quiet link
//     (libpcap reads the ENETDOWN and goes on). Deleted: every read fails
//     at once ("Read Error").
//   - eBPF, set down: the program stays attached and sees nothing.
//     Deleted: the kernel detaches it (an XDP or TCX link stays open with
//     no device; a clsact qdisc goes with the device): nothing errs, the
//     rings stay quiet.
//
// So a down interface is asked of the kernel by name, on polls that found
// nothing (LiveSource.IfaceState), and a source whose interface is gone
// is opened again (Reopen) by whoever drives it.

// IfaceState is how a live source's interface is, as the source sees it.
type IfaceState uint8

const (
	IfaceUp   IfaceState = iota // there, up, and the one the source is on
	IfaceDown                   // there but set down: nothing arrives until it is up
	IfaceGone                   // deleted, or replaced by another of its name: Reopen
)

func (s IfaceState) String() string {
	switch s {
	case IfaceUp:
		return "up"
	case IfaceDown:
		return "down"
	case IfaceGone:
		return "gone"
	}
	return "unknown"
}

// ErrIfaceDown is wrapped by the error a live source's Next returns when
// its interface went down or away under it (AF_PACKET's ENETDOWN,
// libpcap's failing reads once the interface is deleted). It is not an
// end: the caller asks IfaceState, reopens a source whose interface is
// gone, and calls Next again.
var ErrIfaceDown = errors.New("interface down or gone")

// IfaceStateOf is the state of a source's interface that is there (by
// its name, with the index the source is on) or not, and up or not.
func IfaceStateOf(there, up bool) IfaceState {
	switch {
	case !there:
		return IfaceGone
	case !up:
		return IfaceDown
	}
	return IfaceUp
}

// LiveSource is what a live source provides: a Source whose Next returns
// ErrNoPacket when its poll times out, on a named interface it watches
// and reopens, with the kernel's counts. The live pipeline
// (pipeline.RunLive) takes one per shard. The project's are
// afpacket.Socket (capture/afpacket), pcaplive.Handle (capture/pcaplive,
// -tags pcap) and source.Ring (bpf/source, the eBPF program's rings). A
// live source that can reassemble IP fragments is a DefragSource too, as
// the file reader is, and the pipeline gives it a reassembler (AF_PACKET,
// libpcap; the eBPF program's records are no packets).
//
// Next, Stats, SetDecodeOptions, IfaceState and Reopen are for the
// goroutine that reads the source; KernelStats, EBPFStats and Close may be
// called from any goroutine.
type LiveSource interface {
	Source

	// SetDecodeOptions has the frames the source decodes from now on
	// decoded with o (the tunnels' ports and depth, checksums), as
	// DecodeOptionsSetter.
	SetDecodeOptions(o DecodeOptions)

	// KernelStats returns the kernel's (or libpcap's) counts for the
	// source since it was opened, over every socket it had: packets it
	// passed, drops for want of ring space. An error when they cannot be
	// read; a source that keeps none (one of one's own, on no
	// interface) returns one wrapping ErrNotSupported.
	KernelStats() (KernelStats, error)

	// Iface returns the interface's name, "" for a source on none,
	// whose interface nobody watches.
	Iface() string
	// IfaceState says how the source's interface is: up, down, or gone
	// (deleted, or made again with a new index). It asks the kernel (an
	// ioctl or two, in the network namespace the source was opened in):
	// it is for polls that found nothing and for errors, never for every
	// packet. A source on no interface is always IfaceUp.
	IfaceState() IfaceState
	// Reopen, when the state is IfaceGone, opens the source again on the
	// interface that now has the name, with the settings it was opened
	// with (an AF_PACKET socket's ring and fanout group; the eBPF
	// program attached to the new index; a libpcap handle), in its
	// namespace; it fails, leaving the source as it was, while the
	// interface is still missing, and may be called again. Stats and
	// KernelStats go on from what they were.
	Reopen() error

	// EBPFStats returns the eBPF capture program's account of the
	// source's ring: its counts, its sampling, where it is attached. ok
	// is false for a source the program does not feed (AF_PACKET,
	// libpcap answer only that), and once the capture has closed.
	EBPFStats() (st EBPFStats, ok bool)
}

// EBPFStats are what the eBPF capture program says of one of its rings
// (LiveSource.EBPFStats).
type EBPFStats struct {
	Counters EBPFCounters
	// SampleOneIn is the program's sampling: it keeps 1 flow in this many
	// (1: every flow).
	SampleOneIn uint32
	// Attached says where the program is attached: "xdp driver", "xdp
	// generic", "tcx" (TC ingress and egress through TCX links) or
	// "clsact" (TC through a clsact qdisc's filters).
	Attached string
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

// NoIface answers a LiveSource's questions about its interface, the
// kernel's counts and the eBPF program for a source on no interface: one
// of one's own fed by something else (a socket, a file read as if live,
// a test's). Embed it and give Next, Stats, Close and SetDecodeOptions.
// Nobody watches its interface, it keeps no kernel counts (KernelStats
// wraps ErrNotSupported), and no eBPF program feeds it.
type NoIface struct{}

func (NoIface) Iface() string          { return "" }
func (NoIface) IfaceState() IfaceState { return IfaceUp }
func (NoIface) Reopen() error          { return nil }

func (NoIface) KernelStats() (KernelStats, error) {
	return KernelStats{}, fmt.Errorf("kernel counts of a source on no interface: %w", ErrNotSupported)
}

func (NoIface) EBPFStats() (EBPFStats, bool) { return EBPFStats{}, false }
