package pipeline

import (
	"net/netip"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/record"
)

// Consumer is the seam where what reads the per-flow stages' results
// attaches (rules, exporters): each shard has its own, built by the
// pipeline's NewConsumer, and calls it on the shard's goroutine with every
// packet the shard processes and the ACSM's event for it, after the
// shard's own stages. Because a consumer sees only its shard's flows and
// only from one goroutine, it needs no lock; like every stage it must
// allocate nothing per packet and keep memory bounded by configuration.
//
// p is valid only during the call, and its Payload may be nil (workers do
// not carry payloads).
type Consumer interface {
	Packet(p *capture.Packet, ev *acsm.Event)
	// Idle is called, on the same goroutine, when a live shard's source
	// has been quiet for its poll timeout, with the wall clock standing
	// for the packet time no packet brings: what ends with time (a
	// window, an alert that stopped) ends on a quiet link too. A replay
	// never calls it.
	Idle(now time.Time)
	// Finish is called once after the last packet, when the shard's
	// goroutine has stopped; end is the trace's last packet time.
	Finish(end time.Time) error
}

// NewConsumer builds shard's consumer (0 <= shard < shards), which asks
// what it needs beside the packets through lk. It is called once per
// shard when the pipeline is built.
type NewConsumer func(shard, shards int, lk Lookups) (Consumer, error)

// Lookups are what a consumer may ask beside a packet and its event, the
// same for the consumer's whole life: the pipeline builds them for each
// shard from its Config.
type Lookups struct {
	// Novel reports whether the new flow in hand (the Event's New) is
	// between hosts Config.HostPairs had not seen together: the shard
	// records every new flow's pair before its consumers run, and asks
	// the store once (asking it again would find the pair just
	// recorded). It is valid during Consumer.Packet, on the shard's
	// goroutine; nil without a HostPairs.
	Novel func() bool
	// Watchlists are Config.Watchlists (nil without).
	Watchlists Watchlists
}

// HostPairs is a store of the host pairs seen, over a horizon longer
// than memory holds (pipeline/hostpairs, Cascade Filters). Novel records
// that src (the originator) and dst were seen together at now, the
// packet's time (a replay forgets as the live run did), and reports
// whether they had not been within the store's horizon; the shards call
// it at once, and it must not wait on a disk write.
type HostPairs interface {
	Novel(src, dst netip.Addr, now time.Time) bool
}

// Watchlists are named lists of addresses (pipeline/watchlist) shared by
// the shards; answers may be approximate in a Bloom filter's way, never
// a false negative.
type Watchlists interface {
	// Lists names the watchlists there are, sorted.
	Lists() []string
	// Listed reports whether a is on the watchlist named list.
	Listed(list string, a netip.Addr) bool
}

// FlowConsumer is a Consumer that also takes the flows kept outside the
// shards (Config.KernelState), which send flow events instead of packets:
// the pipeline builds one more of each consumer for them (shard index
// shards-1 of shards, the shards and it), called on the reading goroutine
// with Flow and, at the end, Finish; its Packet is never called. A
// consumer that is not a FlowConsumer sees nothing of those flows.
type FlowConsumer interface {
	Consumer
	Flow(ev *record.Event)
}

// CountConsumer is a FlowConsumer that also takes the kernel's packet
// counts as they grow: packets counted in its cells and duplicates its
// duplicate window dropped since the last call, at now (ns, packet time
// in a replay), once a second of it (the duplicates rules' share).
type CountConsumer interface {
	FlowConsumer
	Counts(packets, duplicates uint64, now int64)
}

// DuplicateConsumer is a Consumer that also sees the packets the shard's
// dedup stage drops as duplicates (which Packet never sees), on the same
// goroutine; the duplicates rules count them.
type DuplicateConsumer interface {
	Consumer
	Duplicate(p *capture.Packet)
}
