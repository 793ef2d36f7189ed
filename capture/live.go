package capture

import "errors"

// What the live sources (AF_PACKET in afpacket*.go, libpcap in
// pcaplive*.go) share.

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
// platform does not have (AF_PACKET off Linux, libpcap without -tags pcap).
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
// nothing (IfaceSource.IfaceState), and a source whose interface is gone
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

// IfaceSource is a live source on a named interface (AFPacket, EBPF,
// PcapLive) that can say how its interface is and open itself again on
// the interface that now has the name.
//
// IfaceState asks the kernel (an ioctl or two, in the network namespace
// the source was opened in): it is for polls that found nothing and for
// errors, never for every packet. Reopen, when the state is IfaceGone,
// opens the source again with the settings it was opened with (an
// AF_PACKET socket's ring and fanout group; the eBPF program attached to
// the new index; a libpcap handle), in its namespace; it fails, leaving
// the source as it was, while the interface is still missing, and may be
// called again. The source's Stats and KernelStats go on from what they
// were: they count over every socket it had. IfaceState, Reopen and Next
// are for the goroutine that reads the source.
type IfaceSource interface {
	Source
	Iface() string
	IfaceState() IfaceState
	Reopen() error
}
