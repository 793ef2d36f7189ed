package pipeline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/pipeline/dedup"
)

// samplePackets reads the bundled sample into memory, each packet with
// its own copy of the payload.
func samplePackets(t *testing.T) []capture.Packet {
	t.Helper()
	r, err := capture.Open("../pcaps/sample.pcap")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var pkts []capture.Packet
	var p capture.Packet
	for r.Next(&p) == nil {
		p.Payload = append([]byte(nil), p.Payload...) // the reader reuses its buffer
		pkts = append(pkts, p)
	}
	return pkts
}

// TestDedupShardedFindsEveryWorkersDuplicates: each shard owns the dedup
// of its flows, and a duplicate has its original's flow hash, so with any
// number of workers every duplicate is dropped, whichever worker owns the
// flow. The sample already holds 15 duplicates; the test doubles every
// packet (the copy with its own payload buffer, as a second delivery
// would have) and checks that every shard drops duplicates and that the
// summed counts are exact.
func TestDedupShardedFindsEveryWorkersDuplicates(t *testing.T) {
	orig := samplePackets(t)
	const sampleDups = 15
	unique := uint64(len(orig) - sampleDups)
	for _, workers := range []int{1, 2, 4} {
		t.Run(fmt.Sprint(workers, "-workers"), func(t *testing.T) {
			src := &sliceSource{}
			perShard := make([]uint64, workers)
			for _, p := range orig {
				q := p
				q.Payload = append([]byte(nil), p.Payload...)
				src.pkts = append(src.pkts, p, q)
				perShard[shardOf(p.Hash, workers)]++
			}
			cfg := DefaultConfig()
			cfg.ACSM.Capacity, cfg.FlowCount.ExpectedFlows = 4096, 4096
			cfg.Workers = workers
			pl, err := NewPipeline(cfg)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Run(context.Background(), src, ReplayOptions{Pipeline: pl})
			if err != nil {
				t.Fatal(err)
			}
			if want := uint64(len(src.pkts)) - unique; s.Duplicates != want || s.UniquePackets != unique {
				t.Errorf("%d duplicates, %d unique packets; want %d and %d", s.Duplicates, s.UniquePackets, want, unique)
			}
			for i, sh := range pl.shards {
				c := sh.publishedCounts()
				// Every packet of the shard's flows came twice.
				if perShard[i] == 0 || c.duplicates < perShard[i] || c.unique+c.duplicates != 2*perShard[i] {
					t.Errorf("shard %d of %d: %d unique, %d duplicates; it owns %d packets, each sent twice",
						i, workers, c.unique, c.duplicates, perShard[i])
				}
				if st := sh.dedup.Stats(); st.Duplicates != c.duplicates || st.Packets != 2*perShard[i] {
					t.Errorf("shard %d: its dedup saw %d packets, %d duplicates; the shard counted %d and %d",
						i, st.Packets, st.Duplicates, 2*perShard[i], c.duplicates)
				}
			}
		})
	}
}

// TestDedupShardSizing: each shard's dedup is sized for its share of the
// packet rate, and one worker keeps the whole.
func TestDedupShardSizing(t *testing.T) {
	for _, workers := range []int{1, 2, 4} {
		cfg := DefaultConfig()
		cfg.ACSM.Capacity, cfg.FlowCount.ExpectedFlows = 4096, 4096
		cfg.Workers = workers
		pl, err := NewPipeline(cfg)
		if err != nil {
			t.Fatal(err)
		}
		want := cfg.Dedup.Share(workers).PacketsPerWindow
		for i, sh := range pl.shards {
			if got := sh.dedup.Config().PacketsPerWindow; got != want {
				t.Errorf("%d workers, shard %d: %d packets per window, want %d", workers, i, got, want)
			}
		}
		if workers == 1 && want != dedup.DefaultConfig().PacketsPerWindow {
			t.Errorf("one worker: %d packets per window, want the configured %d", want, dedup.DefaultConfig().PacketsPerWindow)
		}
		if err := pl.Finish(&Summary{}, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPipelinePacketNoAllocs: the reader's part of the packet path (the
// fingerprint and the hand-over) and the inline shard's dedup allocate
// nothing.
func TestPipelinePacketNoAllocs(t *testing.T) {
	pkts := samplePackets(t)
	cfg := DefaultConfig()
	cfg.ACSM.Capacity, cfg.FlowCount.ExpectedFlows = 4096, 4096
	sh, err := newShard(cfg, 0, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	if n := testing.AllocsPerRun(10_000, func() {
		p := &pkts[i%len(pkts)]
		sh.admit(p, dedup.Fingerprint(p, 32))
		i++
	}); n != 0 {
		t.Errorf("fingerprint and check: %v allocs per packet", n)
	}
}

// nopConsumer counts what it sees, so a consumer is on the path.
type nopConsumer struct{ n uint64 }

func (c *nopConsumer) Packet(*capture.Packet, *acsm.Event) { c.n++ }
func (c *nopConsumer) Finish(time.Time) error              { return nil }
func (c *nopConsumer) Idle(time.Time)                      {}

// TestPipelineNoAllocs: the whole packet path, every stage and a
// consumer, with one worker (inline batches) and with two, allocates
// nothing per packet once the flows are in. Each run replays the sample's
// 3,192 packets, shifted in time so that they are new packets of the same
// flows; the flow counter's window (60 s) rotates once every six runs,
// and a rotation may allocate its snapshot, so a run may allocate a
// little, never one object per packet.
func TestPipelineNoAllocs(t *testing.T) {
	pkts := samplePackets(t)
	for _, workers := range []int{1, 2} {
		cfg := DefaultConfig()
		cfg.Workers = workers
		cfg.ACSM.Capacity, cfg.FlowCount.ExpectedFlows = 4096, 4096
		cfg.Consumers = []NewConsumer{func(int, int, Lookups) (Consumer, error) { return &nopConsumer{}, nil }}
		pl, err := NewPipeline(cfg)
		if err != nil {
			t.Fatal(err)
		}
		shift := time.Duration(0)
		run := func() {
			for i := range pkts {
				p := pkts[i]
				p.Timestamp = p.Timestamp.Add(shift)
				pl.Packet(&p)
			}
			shift += 10 * time.Second
		}
		run() // the flows start: their first packets may take memory
		n := testing.AllocsPerRun(30, run)
		if max := 2.0; n > max {
			t.Errorf("%d workers: %v allocations per %d packets, want at most %v", workers, n, len(pkts), max)
		}
		if err := pl.Finish(&Summary{}, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
}
