package engine

import (
	"context"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
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

// TestConsumersSeeEveryPacket: a consumer per shard sees each unique
// packet once, on the shard that owns its flow, with the ACSM's events,
// and is finished once.
func TestConsumersSeeEveryPacket(t *testing.T) {
	for _, workers := range []int{1, 2} {
		var cs []*countingConsumer
		cfg := DefaultConfig()
		cfg.Workers = workers
		cfg.Consumers = []NewConsumer{func(shard, shards int) (Consumer, error) {
			c := &countingConsumer{shard: shard, shards: shards}
			cs = append(cs, c)
			return c, nil
		}}
		s, err := Replay(context.Background(), []string{"../../pcaps/sample.pcap"}, ReplayOptions{Config: cfg})
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
