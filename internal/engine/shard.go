package engine

import (
	"bufio"
	"fmt"
	"io"
	"sync"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/flowcount"
)

// shard owns the per-flow stages for the flows whose hash selects it: its
// ACSM, flow counter and flow table. A shard is driven by one goroutine
// (its worker, or the reader when there is one shard), so nothing in it
// takes a lock on the packet path.
type shard struct {
	tracker *acsm.Tracker
	counter *flowcount.Counter
	flows   *flowTable

	in   chan *batch // nil for an inline shard
	free chan *batch
	done chan struct{}

	mu  sync.Mutex // guards fc, published after each batch
	fc  flowcount.Stats
	err error
}

// batchSize packets go to a worker in one channel send, so the hand-over
// costs a few nanoseconds per packet.
const batchSize = 256

type batch struct {
	pkts [batchSize]capture.Packet
	n    int
}

func newShard(cfg Config, workers int, log io.Writer) (*shard, error) {
	ac := cfg.ACSM
	ac.Capacity = max(1, (ac.Capacity+workers-1)/workers)
	fo := cfg.FlowCount
	// Every shard's filter has the full shape: peers compare one window
	// filter with another, and the handler merges the shards' filters,
	// which needs equal shapes. The shards hold disjoint flows, so the
	// merge has the load of one.
	s := &shard{}
	var err error
	if s.tracker, err = acsm.New(ac); err != nil {
		return nil, fmt.Errorf("build acsm stage: %w", err)
	}
	if s.counter, err = flowcount.New(fo); err != nil {
		return nil, fmt.Errorf("build flow counter: %w", err)
	}
	to := ac.Timeouts.WithDefaults()
	s.flows = newFlowTable(log, max(1, cfg.MaxFlows/workers), to.New, to.Established)
	return s, nil
}

func (s *shard) packet(p *capture.Packet) {
	ev := s.tracker.Observe(p)
	s.counter.Add(p.Hash, p.Timestamp)
	s.flows.packet(p, &ev)
}

// start runs the shard on its own goroutine, fed through in.
func (s *shard) start() {
	s.in = make(chan *batch, 4)
	s.free = make(chan *batch, 6)
	for range cap(s.free) {
		s.free <- new(batch)
	}
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		for b := range s.in {
			for i := range b.n {
				s.packet(&b.pkts[i])
			}
			b.n = 0
			s.publish()
			s.free <- b
		}
	}()
}

func (s *shard) publish() {
	st := s.counter.Stats()
	s.mu.Lock()
	s.fc = st
	s.mu.Unlock()
}

func (s *shard) flowcountStats() flowcount.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fc
}

// shardOf picks a shard from the flow hash's top bits; the structures
// index with the low bits (remixed), so the shards stay evenly loaded.
func shardOf(h uint64, n int) int {
	return int((h >> 32) * uint64(n) >> 32)
}

// syncWriter lets the shards write whole flow records to one writer: a
// json.Encoder writes each record in one Write call.
type syncWriter struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (w *syncWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(b)
}

func (w *syncWriter) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Flush()
}
