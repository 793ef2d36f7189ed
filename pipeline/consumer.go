package pipeline

import (
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
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
	// Finish is called once after the last packet, when the shard's
	// goroutine has stopped; end is the trace's last packet time.
	Finish(end time.Time) error
}

// NewConsumer builds shard's consumer (0 <= shard < shards). It is called
// once per shard when the pipeline is built.
type NewConsumer func(shard, shards int) (Consumer, error)

// DuplicateConsumer is a Consumer that also sees the packets the shard's
// dedup stage drops as duplicates (which Packet never sees), on the same
// goroutine; the duplicates rules count them.
type DuplicateConsumer interface {
	Consumer
	Duplicate(p *capture.Packet)
}
