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
