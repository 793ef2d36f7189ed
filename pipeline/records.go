package pipeline

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/health"
	"github.com/flowmon/flowmon/record"
)

// Flow records leave the shards as record.Flow values, in batches, and a
// delivery goroutine hands the batches to the sinks (Config.Sinks) in the
// order they were queued. A replay with one worker queues them as its
// flows end; with several, each shard keeps its records tagged with the
// sequence number of the packet whose processing wrote them, and the
// reading goroutine merges the shards' records in that order at sync
// points, so the records are the same, in the same order, run after run
// for a given number of workers, where writing as the workers go would
// interleave the shards as the scheduler happens to run them. (Across
// worker counts the records are the same but their order is not: a shard
// sweeps its idle flows at its own packets' times.) A live shard queues
// its batch after each batch of packets and when its source is idle.
//
// The queue is bounded (queuedBatches) and a full one makes the queuing
// goroutine wait: a file sink loses nothing, and the replay runs at the
// pace of the slowest sink. The delivery goroutine is there because the
// reading goroutine is a replay's serial part: encoding and writing on it
// would add their whole time to the replay's, where beside it they take
// a core the workers leave idle. A sink that can block for long (a
// network exporter) keeps its own bounded queue and drops, counting.

// recordBatch is how many records a shard hands the sinks at once when it
// writes them itself: enough to amortize a sink's call and write, few
// enough (about 45 KiB) to stay in cache.
const recordBatch = 256

// queuedBatches bounds the batches queued or being delivered: 8 of 256
// records, about 370 KiB.
const queuedBatches = 8

// The worker shards' records are merged once a shard holds recordSyncAt
// of them (as it last said, after a batch), so the memory they take is
// bounded whatever the traffic (a flood of one-packet flows ends a flow
// a packet), and at the latest every logSyncEvery packets, so a record
// waits that long at most. A merge waits for every worker to finish its
// queued batches, a pipeline bubble of about a millisecond, so merges
// are rare: on a trace of long flows the packet bound sets them, on one
// of short flows the record bound (a few hundred KiB a shard). Tests
// lower both.
var (
	logSyncEvery uint64 = 1 << 17
	recordSyncAt int64  = 2048
)

// recordOut is a shard's outgoing records.
type recordOut struct {
	flows []record.Flow
	// sinks, when set, takes the records every recordBatch (the shard
	// queues them itself); when nil the records wait, tagged in seqs, for
	// the pipeline's merge.
	sinks *sinkSet
	seqs  []uint64
	seq   uint64 // tag of what is written now: the packet in hand
	// held is how many records a worker shard held after its last batch,
	// read by the pipeline to merge before they pile up.
	held atomic.Int64
}

func newRecordOut(direct *sinkSet) *recordOut {
	return &recordOut{sinks: direct, flows: make([]record.Flow, 0, recordBatch)}
}

// Next returns the record to fill for the flow being written
// (flowtable.Out).
func (o *recordOut) Next() *record.Flow {
	if o.sinks != nil {
		if len(o.flows) == recordBatch {
			o.flush()
		}
	} else {
		o.seqs = append(o.seqs, o.seq)
	}
	o.flows = append(o.flows, record.Flow{})
	return &o.flows[len(o.flows)-1]
}

// flush queues the records held for the sinks (a shard that queues its
// own), handing its batch over and taking an empty one.
func (o *recordOut) flush() {
	if len(o.flows) > 0 && o.sinks != nil {
		o.flows = o.sinks.queue(o.flows)
	}
}

// merger puts the worker shards' records in order for the sinks.
type merger struct {
	outs []*recordOut
	idx  []int         // per shard, its next record
	buf  []record.Flow // the batch being filled
}

func newMerger(outs []*recordOut) *merger {
	return &merger{outs: outs, idx: make([]int, len(outs)), buf: make([]record.Flow, 0, recordBatch)}
}

// merge queues the shards' records for sinks in tag order, ties in shard
// order, in batches of recordBatch, and empties the shards' records.
func (m *merger) merge(sinks *sinkSet) {
	clear(m.idx)
	for {
		best := -1
		for i, o := range m.outs {
			if m.idx[i] < len(o.flows) && (best < 0 || o.seqs[m.idx[i]] < m.outs[best].seqs[m.idx[best]]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		m.buf = append(m.buf, m.outs[best].flows[m.idx[best]])
		m.idx[best]++
		if len(m.buf) == recordBatch {
			m.buf = sinks.queue(m.buf)
		}
	}
	if len(m.buf) > 0 {
		m.buf = sinks.queue(m.buf)
	}
	for _, o := range m.outs {
		o.flows, o.seqs = o.flows[:0], o.seqs[:0]
		o.held.Store(0)
	}
}

// sinkSet delivers batches of records to every sink on its own goroutine,
// in the order they were queued, and keeps each sink's health (a
// health.Component, "records:NAME"): a sink's failure is logged when it
// starts and when it ends, and counted, and the next batch goes to it as
// if nothing happened.
type sinkSet struct {
	sinks   []*sinkState
	cidSeed uint16         // the seed of the records' Community IDs (fillCommunityIDs)
	batches chan sinkBatch // queued, in order
	free    chan []record.Flow
	done    chan struct{}
	closed  bool

	mu  sync.Mutex
	err error // the first failure, which Finish returns
}

// sinkBatch is a batch of records to deliver, or (flush) a request to
// flush every sink, or (delivered) a request to say when everything
// queued before it is delivered.
type sinkBatch struct {
	flows     []record.Flow
	flush     bool
	delivered chan<- struct{}
}

type sinkState struct {
	record.Named
	written atomic.Uint64 // records delivered
	failed  atomic.Uint64 // records in batches that failed
	dropped atomic.Uint64 // records taken, then lost (record.LossError)
	errors  atomic.Uint64 // failed calls (WriteFlows, Flush)
	health  *health.Component
}

// newSinkSet starts the delivery to sinks, their failures logged to log
// and their components added to hr (both may be nil); the records get
// their Community IDs with seed cidSeed.
func newSinkSet(sinks []record.Named, log *slog.Logger, hr *health.Registry, cidSeed uint16) *sinkSet {
	if len(sinks) == 0 {
		return nil
	}
	s := &sinkSet{cidSeed: cidSeed, batches: make(chan sinkBatch, queuedBatches), free: make(chan []record.Flow, queuedBatches+1),
		done: make(chan struct{})}
	for _, n := range sinks {
		k := &sinkState{Named: n, health: health.New("records:"+n.Name, log)}
		hr.Add(k.health)
		s.sinks = append(s.sinks, k)
	}
	for range queuedBatches + 1 {
		s.free <- make([]record.Flow, 0, recordBatch)
	}
	go s.deliver()
	return s
}

// queue queues flows for delivery and returns an empty batch to fill in
// their place, waiting for one while the queue is full.
func (s *sinkSet) queue(flows []record.Flow) []record.Flow {
	s.batches <- sinkBatch{flows: flows}
	return <-s.free
}

// flush has every sink flush after the batches queued so far.
func (s *sinkSet) flush() {
	if s != nil && !s.closed {
		s.batches <- sinkBatch{flush: true}
	}
}

// wait returns once everything queued so far is delivered.
func (s *sinkSet) wait() {
	done := make(chan struct{})
	s.batches <- sinkBatch{delivered: done}
	<-done
}

// close delivers what is queued, flushes the sinks, stops the delivery
// goroutine, and returns the first failure of any sink (nil if none).
func (s *sinkSet) close() error {
	if s == nil {
		return nil
	}
	if !s.closed {
		s.closed = true
		s.batches <- sinkBatch{flush: true}
		close(s.batches)
		<-s.done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// fillCommunityIDs sets the records' Community IDs: a SHA-1 a record,
// computed here, on the delivery goroutine, rather than by the shard that
// wrote the record, whose goroutine is the packet path.
func (s *sinkSet) fillCommunityIDs(flows []record.Flow) {
	for i := range flows {
		f := &flows[i]
		k := capture.Key{Src: f.Orig, Dst: f.Resp, SrcPort: f.OrigPort, DstPort: f.RespPort, Proto: f.Proto}
		capture.AppendCommunityID(f.CommunityID[:0], &k, s.cidSeed, false)
	}
}

func (s *sinkSet) deliver() {
	defer close(s.done)
	for b := range s.batches {
		if len(b.flows) > 0 {
			s.fillCommunityIDs(b.flows)
			for _, k := range s.sinks {
				err := k.WriteFlows(b.flows)
				n := uint64(len(b.flows))
				var le *record.LossError
				switch {
				case err == nil:
					k.written.Add(n)
				case errors.As(err, &le):
					failed := min(le.Failed, n)
					k.written.Add(n - failed)
					k.failed.Add(failed)
				default:
					k.failed.Add(n)
				}
				s.result(k, err, "write")
			}
			s.free <- b.flows[:0]
		}
		if b.flush {
			for _, k := range s.sinks {
				s.result(k, k.Flush(), "flush")
			}
		}
		if b.delivered != nil {
			close(b.delivered)
		}
	}
}

// result records the outcome of a call to k.
func (s *sinkSet) result(k *sinkState, err error, op string) {
	if err != nil {
		k.errors.Add(1)
		var le *record.LossError
		lossy := errors.As(err, &le)
		if lossy {
			k.dropped.Add(le.Dropped)
		}
		k.health.Fail(err)
		// A sink failing with nothing lost yet (its queue holds the
		// records) is unhealthy but does not fail the run.
		if lossy && !le.Lost() {
			return
		}
		s.mu.Lock()
		if s.err == nil {
			s.err = &SinkError{Sink: k.Name, Err: err}
		}
		s.mu.Unlock()
		return
	}
	if op == "write" { // a flush that works says nothing of the writes
		k.health.OK()
	}
}

// SinkError is a record sink's failure: records it did not take.
type SinkError struct {
	Sink string
	Err  error
}

func (e *SinkError) Error() string { return fmt.Sprintf("write flow records to %s: %v", e.Sink, e.Err) }
func (e *SinkError) Unwrap() error { return e.Err }

// SinkHealth is one record sink's state, for metrics and health checks.
type SinkHealth struct {
	Name                             string
	Written, Failed, Dropped, Errors uint64
	Failing                          bool
}

// Sinks returns the record sinks' health; it may be called from any
// goroutine.
func (p *Pipeline) Sinks() []SinkHealth {
	if p.sinks == nil {
		return nil
	}
	out := make([]SinkHealth, len(p.sinks.sinks))
	for i, k := range p.sinks.sinks {
		out[i] = SinkHealth{Name: k.Name, Written: k.written.Load(), Failed: k.failed.Load(), Dropped: k.dropped.Load(),
			Errors: k.errors.Load(), Failing: k.health.Failing()}
	}
	return out
}

var (
	descSinkWritten = prometheus.NewDesc("flowmon_records_written_total", "Flow records a sink took.", []string{"sink"}, nil)
	descSinkFailed  = prometheus.NewDesc("flowmon_records_failed_total", "Flow records in batches a sink failed to take (not retried).", []string{"sink"}, nil)
	descSinkDropped = prometheus.NewDesc("flowmon_records_dropped_total", "Flow records a sink took, then lost (a network exporter's queue full or send failed).", []string{"sink"}, nil)
	descSinkErrors  = prometheus.NewDesc("flowmon_records_sink_errors_total", "Failed calls to a sink (a batch written, a flush).", []string{"sink"}, nil)
)

// sinkCollector exports the record sinks' counts; their health is
// flowmon_component_up{component="records:NAME"}.
type sinkCollector struct{ p *Pipeline }

func (c sinkCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSinkWritten, descSinkFailed, descSinkDropped, descSinkErrors} {
		ch <- d
	}
}

func (c sinkCollector) Collect(ch chan<- prometheus.Metric) {
	for _, h := range c.p.Sinks() {
		ch <- prometheus.MustNewConstMetric(descSinkWritten, prometheus.CounterValue, float64(h.Written), h.Name)
		ch <- prometheus.MustNewConstMetric(descSinkFailed, prometheus.CounterValue, float64(h.Failed), h.Name)
		ch <- prometheus.MustNewConstMetric(descSinkDropped, prometheus.CounterValue, float64(h.Dropped), h.Name)
		ch <- prometheus.MustNewConstMetric(descSinkErrors, prometheus.CounterValue, float64(h.Errors), h.Name)
	}
}
