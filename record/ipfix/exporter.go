package ipfix

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/record"
)

// ErrFlushTimeout is Flush's and Close's error when a queue has not
// drained within the wait.
var ErrFlushTimeout = errors.New("ipfix: queue not drained in time")

// ErrQueueFull says a collector's queue had no room for records, which
// were dropped.
var ErrQueueFull = errors.New("ipfix: queue full")

// Exporter is a record.Sink sending records to IPFIX collectors. The
// pipeline calls WriteFlows and Flush from one goroutine; the metrics
// may be collected from any.
//
// WriteFlows and Flush report the records lost as a *record.LossError:
// those dropped at a full queue (Failed) and those lost since the last
// report (Dropped: a message whose write failed, a queue not sent in
// time), with the error of each collector failing then, by its address.
// With several collectors each one's losses count. A collector's failure
// itself (a UDP socket's error, a TCP connection down) is its component
// (Options.Health), whether or not records are written meanwhile.
type Exporter struct {
	opt  Options
	cols []*collector
	// sent holds, for each flow with an interim record sent, the counts
	// sent so far (by uid seed); scratch is the batch with delta counts.
	sent    map[uint64]flowCounts
	scratch []record.Flow
}

// flowCounts are a flow's counts as its records carry them.
type flowCounts struct{ origPkts, respPkts, origBytes, respBytes uint64 }

// New starts an exporter to o's collectors, registering its metrics on
// reg (nil: none). TCP collectors are connected in the background: one
// that is down is retried, and its records queue, then drop.
func New(o Options, reg prometheus.Registerer) (*Exporter, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	x := &Exporter{opt: o, sent: map[uint64]flowCounts{}}
	for _, addr := range o.Collectors {
		c := newCollector(addr, o)
		o.Health.Add(c.health)
		x.cols = append(x.cols, c)
	}
	if reg != nil {
		if err := reg.Register(metrics{x}); err != nil {
			return nil, fmt.Errorf("register ipfix metrics: %w", err)
		}
	}
	for _, c := range x.cols {
		go c.run()
	}
	return x, nil
}

// WriteFlows queues flows for every collector. It does not wait, but
// with Options.WaitForRoom for room in the queue of a collector that is
// not failing; the records a queue has no room for are dropped, counted
// and reported.
func (x *Exporter) WriteFlows(flows []record.Flow) error {
	flows = x.deltas(flows)
	var failed uint64
	var full []error
	for _, c := range x.cols {
		if n := c.queue(flows); n > 0 {
			failed += uint64(n)
			full = append(full, fmt.Errorf("collector %s: %w: %d records dropped", c.addr, ErrQueueFull, n))
		}
	}
	return x.report(failed, full...)
}

// report returns what WriteFlows and Flush say: nil when no record was
// lost since the last report (a failing collector's records wait in its
// queue), else the records failed and lost, with errs and each failing
// collector's error.
func (x *Exporter) report(failed uint64, errs ...error) error {
	var dropped uint64
	for _, c := range x.cols {
		lost := c.droppedSend.Load() + c.droppedUnsent.Load() + c.droppedRefused.Load()
		dropped += lost - c.reported
		c.reported = lost
		if err := c.failure(); err != nil {
			errs = append(errs, fmt.Errorf("collector %s: %w", c.addr, err))
		}
	}
	if failed == 0 && dropped == 0 {
		return nil
	}
	if len(errs) == 0 {
		errs = append(errs, errors.New("ipfix: records lost in failed sends"))
	}
	return &record.LossError{Failed: failed, Dropped: dropped, Err: errors.Join(errs...)}
}

// deltas returns flows with the counts of a flow that had an interim
// record made deltas: what each record adds to the flow's records sent
// before. Without interim records it returns flows as they are.
func (x *Exporter) deltas(flows []record.Flow) []record.Flow {
	need := false
	for i := range flows {
		if flows[i].EndReason == record.EndActive {
			need = true
			break
		}
	}
	if !need && len(x.sent) == 0 {
		return flows
	}
	x.scratch = append(x.scratch[:0], flows...)
	for i := range x.scratch {
		f := &x.scratch[i]
		cum := flowCounts{f.OrigPkts, f.RespPkts, f.OrigIPBytes, f.RespIPBytes}
		prev, seen := x.sent[f.UID]
		if f.EndReason == record.EndActive {
			x.sent[f.UID] = cum
		} else if seen {
			delete(x.sent, f.UID)
		}
		if seen {
			f.OrigPkts, f.RespPkts = cum.origPkts-prev.origPkts, cum.respPkts-prev.respPkts
			f.OrigIPBytes, f.RespIPBytes = cum.origBytes-prev.origBytes, cum.respBytes-prev.respBytes
		}
	}
	return x.scratch
}

// Flush waits for every collector's queue to be sent: up to
// Options.FlushWait plus the time its queue takes at Options.Rate (UDP),
// so that a paced queue is not cut short. Records are never held back
// between batches, so with no FlushWait it does not wait, and only
// reports. The records still queued when the wait runs out are dropped
// and reported.
func (x *Exporter) Flush() error {
	var err error
	if x.opt.FlushWait > 0 {
		err = x.drain(x.FlushWait())
	}
	if err != nil {
		return x.report(0, err)
	}
	return x.report(0)
}

// FlushWait is how long Flush would wait now: Options.FlushWait, plus the
// longest queue's sending time at Options.Rate for UDP.
func (x *Exporter) FlushWait() time.Duration {
	w := x.opt.FlushWait
	if x.opt.Transport != TransportUDP {
		return w
	}
	longest := 0
	for _, c := range x.cols {
		longest = max(longest, c.q.Len())
	}
	return w + time.Duration(float64(longest)/float64(x.opt.Rate)*float64(time.Second))
}

// drain waits until every queue's records queued so far are sent, or
// wait passes; then it drops, counted, what is left.
func (x *Exporter) drain(wait time.Duration) error {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	var errs []error
	for _, c := range x.cols {
		if !c.q.Drained(deadline.C) {
			c.droppedUnsent.Add(uint64(c.q.Discard()))
			errs = append(errs, fmt.Errorf("collector %s: %w (%v)", c.addr, ErrFlushTimeout, wait.Round(time.Millisecond)))
		}
	}
	return errors.Join(errs...)
}

// Close sends what is queued (waiting up to Options.CloseWait), then
// stops the collectors' goroutines and closes their connections. The
// records left unsent are dropped, counted, and make its error.
func (x *Exporter) Close() error {
	var errs []error
	if x.opt.CloseWait > 0 {
		errs = append(errs, x.drain(x.opt.CloseWait))
	}
	for _, c := range x.cols {
		close(c.stop)
		c.q.Signal(true)
	}
	for _, c := range x.cols {
		c.closeConn()
		<-c.done
		if n := c.q.Discard(); n > 0 {
			c.droppedUnsent.Add(uint64(n))
			errs = append(errs, fmt.Errorf("collector %s: %d records unsent at close: %w", c.addr, n, ErrFlushTimeout))
		}
	}
	return errors.Join(errs...)
}

// CollectorStats is one collector's counts.
type CollectorStats struct {
	Addr                   string
	Up                     bool
	Records                uint64 // data records sent
	DroppedQueue           uint64 // records dropped at a full queue
	DroppedSend            uint64 // records in messages whose write failed
	DroppedRefused         uint64 // records of the message a collector's port unreachable came back for
	DroppedUnsent          uint64 // records still queued when Flush or Close gave up
	Messages, Bytes        uint64 // sent, templates included
	DialErrors, SendErrors uint64
	QueuedRecords          int
}

// Stats returns each collector's counts, in Options.Collectors' order.
func (x *Exporter) Stats() []CollectorStats {
	out := make([]CollectorStats, len(x.cols))
	for i, c := range x.cols {
		out[i] = CollectorStats{Addr: c.addr, Up: !c.health.Failing(), Records: c.records.Load(),
			DroppedQueue: c.droppedQueue.Load(), DroppedSend: c.droppedSend.Load(), DroppedRefused: c.droppedRefused.Load(), DroppedUnsent: c.droppedUnsent.Load(),
			Messages: c.messages.Load(), Bytes: c.bytes.Load(),
			DialErrors: c.dialErrors.Load(), SendErrors: c.sendErrors.Load(), QueuedRecords: c.q.Len()}
	}
	return out
}
