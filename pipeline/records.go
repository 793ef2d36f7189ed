package pipeline

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/record"
)

// Flow records leave the shards as record.Flow values and reach the
// sinks (Config.Sinks) in batches, on the goroutine that puts them in
// order, with no queue between: a replay with one worker writes them from
// its one goroutine as the flows end; with several, each shard keeps its
// records tagged with the sequence number of the packet whose processing
// wrote them, and the reading goroutine merges the shards' records in
// that order at sync points, so the records are the same, in the same
// order, run after run for a given number of workers, where writing as
// the workers go would interleave the shards as the scheduler happens to
// run them. (Across worker counts the records are the same but their
// order is not: a shard sweeps its idle flows at its own packets' times.)
// A live shard writes its batch under the sinks' lock after each batch of
// packets and when its source is idle. A sink that can block (a network
// exporter) keeps its own bounded queue; the file writer writes in the
// call, as the replay's time is the file's to spend.

// recordBatch is how many records a shard hands the sinks at once when it
// writes them itself: enough to amortize a sink's call and write, few
// enough (about 45 KiB) to stay in cache.
const recordBatch = 256

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
	// writes them itself); when nil the records wait, tagged in seqs, for
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

// next returns the record to fill for the flow being written.
func (o *recordOut) next() *record.Flow {
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

// flush hands the records held to the sinks (a shard that writes its own).
func (o *recordOut) flush() {
	if len(o.flows) > 0 && o.sinks != nil {
		o.sinks.write(o.flows)
	}
	o.flows = o.flows[:0]
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

// merge hands the shards' records to sinks in tag order, ties in shard
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
			sinks.write(m.buf)
			m.buf = m.buf[:0]
		}
	}
	if len(m.buf) > 0 {
		sinks.write(m.buf)
		m.buf = m.buf[:0]
	}
	for _, o := range m.outs {
		o.flows, o.seqs = o.flows[:0], o.seqs[:0]
		o.held.Store(0)
	}
}

// sinkSet delivers batches of records to every sink, one batch at a time
// (the live shards write from their own goroutines), and keeps each
// sink's health: a sink's failure is logged when it starts and when it
// ends, and counted, and the run goes on with the next batch.
type sinkSet struct {
	mu    sync.Mutex
	sinks []*sinkState
	log   *slog.Logger
	err   error // the first failure, which Finish returns
}

type sinkState struct {
	record.Named
	written atomic.Uint64 // records delivered
	failed  atomic.Uint64 // records in batches that failed
	errors  atomic.Uint64 // failed calls (WriteFlows, Flush)
	failing atomic.Bool   // the last call failed
	lastErr error         // the error that started the failure (under mu)
}

func newSinkSet(sinks []record.Named, log *slog.Logger) *sinkSet {
	if len(sinks) == 0 {
		return nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &sinkSet{log: log}
	for _, n := range sinks {
		s.sinks = append(s.sinks, &sinkState{Named: n})
	}
	return s
}

func (s *sinkSet) write(flows []record.Flow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.sinks {
		err := k.WriteFlows(flows)
		if err == nil {
			k.written.Add(uint64(len(flows)))
		} else {
			k.failed.Add(uint64(len(flows)))
		}
		s.result(k, err, "write")
	}
}

// flush flushes every sink.
func (s *sinkSet) flush() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.sinks {
		s.result(k, k.Flush(), "flush")
	}
}

// result records the outcome of a call to k (under mu).
func (s *sinkSet) result(k *sinkState, err error, op string) {
	if err != nil {
		k.errors.Add(1)
		if !k.failing.Load() {
			k.failing.Store(true)
			k.lastErr = err
			s.log.Error("flow record sink failing", "sink", k.Name, "op", op, "err", err)
		}
		if s.err == nil {
			s.err = fmt.Errorf("write flow records to %s: %w", k.Name, err)
		}
		return
	}
	if k.failing.Load() {
		k.failing.Store(false)
		s.log.Info("flow record sink recovered", "sink", k.Name, "failed_records", k.failed.Load(), "errors", k.errors.Load())
	}
}

// firstErr is the first failure of any sink, nil if none failed.
func (s *sinkSet) firstErr() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// SinkHealth is one record sink's state, for metrics and health checks.
type SinkHealth struct {
	Name                    string
	Written, Failed, Errors uint64
	Failing                 bool
}

// Sinks returns the record sinks' health; it may be called from any
// goroutine.
func (p *Pipeline) Sinks() []SinkHealth {
	if p.sinks == nil {
		return nil
	}
	out := make([]SinkHealth, len(p.sinks.sinks))
	for i, k := range p.sinks.sinks {
		out[i] = SinkHealth{Name: k.Name, Written: k.written.Load(), Failed: k.failed.Load(), Errors: k.errors.Load(), Failing: k.failing.Load()}
	}
	return out
}

var (
	descSinkWritten = prometheus.NewDesc("flowmon_records_written_total", "Flow records a sink took.", []string{"sink"}, nil)
	descSinkFailed  = prometheus.NewDesc("flowmon_records_failed_total", "Flow records in batches a sink failed to take (not retried).", []string{"sink"}, nil)
	descSinkErrors  = prometheus.NewDesc("flowmon_records_sink_errors_total", "Failed calls to a sink (a batch written, a flush).", []string{"sink"}, nil)
	descSinkFailing = prometheus.NewDesc("flowmon_records_sink_failing", "1 while a sink's last call failed.", []string{"sink"}, nil)
)

// sinkCollector exports the record sinks' health.
type sinkCollector struct{ p *Pipeline }

func (c sinkCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSinkWritten, descSinkFailed, descSinkErrors, descSinkFailing} {
		ch <- d
	}
}

func (c sinkCollector) Collect(ch chan<- prometheus.Metric) {
	for _, h := range c.p.Sinks() {
		failing := 0.0
		if h.Failing {
			failing = 1
		}
		ch <- prometheus.MustNewConstMetric(descSinkWritten, prometheus.CounterValue, float64(h.Written), h.Name)
		ch <- prometheus.MustNewConstMetric(descSinkFailed, prometheus.CounterValue, float64(h.Failed), h.Name)
		ch <- prometheus.MustNewConstMetric(descSinkErrors, prometheus.CounterValue, float64(h.Errors), h.Name)
		ch <- prometheus.MustNewConstMetric(descSinkFailing, prometheus.GaugeValue, failing, h.Name)
	}
}
