package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/pipeline/flowcount"
)

// countingConsumer counts what its shard shows it.
type countingConsumer struct {
	shard, shards   int
	packets, starts uint64
	wrongShard      uint64 // packets whose hash belongs to another shard
	finished        bool
}

func (c *countingConsumer) Packet(p *capture.Packet, ev *acsm.Event) {
	c.packets++
	if ev.New {
		c.starts++
	}
	if shardOf(p.Hash, c.shards) != c.shard {
		c.wrongShard++
	}
}

func (c *countingConsumer) Finish(time.Time) error { c.finished = true; return nil }
func (c *countingConsumer) Idle(time.Time)         {}

// TestConsumersSeeEveryPacket: a consumer per shard sees each unique
// packet once, on the shard that owns its flow, with the ACSM's events,
// and is finished once.
func TestConsumersSeeEveryPacket(t *testing.T) {
	for _, workers := range []int{1, 2} {
		var cs []*countingConsumer
		cfg := DefaultConfig()
		cfg.Workers = workers
		cfg.Consumers = []NewConsumer{func(shard, shards int, _ Lookups) (Consumer, error) {
			c := &countingConsumer{shard: shard, shards: shards}
			cs = append(cs, c)
			return c, nil
		}}
		s, err := Replay(context.Background(), []string{"../pcaps/sample.pcap"}, ReplayOptions{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != workers {
			t.Fatalf("%d workers: %d consumers built", workers, len(cs))
		}
		var packets, starts uint64
		for _, c := range cs {
			packets += c.packets
			starts += c.starts
			if c.wrongShard > 0 || !c.finished || (workers > 1 && c.packets == 0) {
				t.Errorf("%d workers, shard %d: %+v", workers, c.shard, *c)
			}
		}
		if packets != s.UniquePackets || starts != s.ACSM.NewFlows {
			t.Errorf("%d workers: consumers saw %d packets and %d flow starts; the summary has %d unique packets and %d new flows",
				workers, packets, starts, s.UniquePackets, s.ACSM.NewFlows)
		}
	}
}

// perPacketCounter counts every packet it sees in a flow counter of its
// own, one Add a packet: the reference for the shard's counter, which
// the flow table feeds a flow's packets at once.
type perPacketCounter struct {
	ref    *flowcount.Counter
	hashes map[uint64]bool
}

func (c *perPacketCounter) Packet(p *capture.Packet, _ *acsm.Event) {
	c.ref.Add(p.Hash, p.Timestamp)
	c.hashes[p.Hash] = true
}
func (c *perPacketCounter) Finish(time.Time) error { c.ref.Flush(); return nil }
func (c *perPacketCounter) Idle(time.Time)         {}

// TestFlowCountsMatchPerPacketCounting: over a 150 s trace (two window
// rotations, flows ending, timing out and capped), the shard's flow
// counter, fed by the flow table a flow at a time, publishes the windows
// a counter fed packet by packet publishes: the same windows, packets,
// drops, distinct flows and every flow's count.
func TestFlowCountsMatchPerPacketCounting(t *testing.T) {
	trace := genTrace(t, gen.Options{Flows: 30_000, Seed: 9, Duration: 150 * time.Second})
	cfg := DefaultConfig()
	cfg.Workers = 1
	cfg.ACSM.Capacity, cfg.FlowCount.ExpectedFlows, cfg.MaxFlows = 4096, 8192, 2048
	var cc *perPacketCounter
	cfg.Consumers = []NewConsumer{func(int, int, Lookups) (Consumer, error) {
		ref, err := flowcount.New(cfg.FlowCount)
		cc = &perPacketCounter{ref: ref, hashes: map[uint64]bool{}}
		return cc, err
	}}
	pl, err := NewPipeline(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Replay(context.Background(), []string{trace}, ReplayOptions{Pipeline: pl})
	if err != nil {
		t.Fatal(err)
	}
	if s.FlowsAtCap == 0 {
		t.Errorf("the flow table never reached its cap: the test does not cover flows leaving it")
	}
	got, want := pl.shards[0].counter, cc.ref
	if g, w := got.Stats().Windows, want.Stats().Windows; g != w || g < 3 {
		t.Fatalf("%d windows published, want %d (at least 3)", g, w)
	}
	gs, ws := got.Last(), want.Last()
	if gs.Packets != ws.Packets || gs.Dropped != ws.Dropped || gs.Filter.Stats().Distinct != ws.Filter.Stats().Distinct ||
		!gs.Start.Equal(ws.Start) {
		t.Errorf("last window: %d packets, %d dropped, %d flows from %v; per packet: %d, %d, %d from %v",
			gs.Packets, gs.Dropped, gs.Filter.Stats().Distinct, gs.Start, ws.Packets, ws.Dropped, ws.Filter.Stats().Distinct, ws.Start)
	}
	wrong := 0
	for h := range cc.hashes {
		if gs.Filter.Count(h) != ws.Filter.Count(h) {
			wrong++
		}
	}
	if wrong > 0 {
		t.Errorf("%d of %d flows have another count in the last window", wrong, len(cc.hashes))
	}
}
