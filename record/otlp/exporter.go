package otlp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"

	"github.com/flowmon/flowmon/internal/health"
	"github.com/flowmon/flowmon/internal/queue"
	"github.com/flowmon/flowmon/record"
)

// The backoff between attempts at a failing collector (health.Backoff:
// doubling, jittered); a Retry-After or RetryInfo longer than the
// backoff's step is waited instead, up to maxRetryAfter.
const (
	minBackoff    = 250 * time.Millisecond
	maxBackoff    = 30 * time.Second
	maxRetryAfter = 5 * time.Minute
)

// ErrFlushTimeout is Flush's and Close's error when the queue has not
// drained within the wait.
var ErrFlushTimeout = errors.New("otlp: queue not drained in time")

// ErrQueueFull says the queue had no room for records, which were
// dropped.
var ErrQueueFull = errors.New("otlp: queue full")

// ErrRejected says the collector refused records for good (an answer
// that is not to be retried, or a partial success).
var ErrRejected = errors.New("otlp: records rejected")

// Exporter is a record.Sink sending records to an OpenTelemetry
// collector as OTLP logs, one log record a flow record. The pipeline
// calls WriteFlows and Flush from one goroutine; the metrics may be
// collected from any.
//
// WriteFlows and Flush report the records lost as a *record.LossError:
// those dropped at a full queue (Failed) and those lost since the last
// report (Dropped: rejected by the collector, or still queued when a
// flush gave up), with the collector's error while it fails. A failure
// itself (a request that failed, waiting to be retried) is the
// exporter's component (Options.Health).
type Exporter struct {
	opt    Options
	name   string
	q      *queue.Ring[record.Flow]
	cl     client
	enc    *encoder
	health *health.Component
	stop   chan struct{}
	done   chan struct{}
	// abandon tells the sender to drop the batch it retries: a flush
	// gave up waiting for it.
	abandon chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc

	// reported is the losses WriteFlows and Flush have reported (the
	// pipeline's goroutine's alone).
	reported uint64

	sent, batches, retries, bytes                atomic.Uint64
	droppedQueue, droppedRejected, droppedUnsent atomic.Uint64
}

// New starts an exporter to o's endpoint, registering its metrics on
// reg (nil: none). Nothing is dialled before the first batch: a
// collector that is down is retried, and the records queue, then drop.
func New(o Options, reg prometheus.Registerer) (*Exporter, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	if o.HeadersFile != "" {
		hs, err := readHeaders(o.HeadersFile)
		if err != nil {
			return nil, err
		}
		o.Headers = append(o.Headers[:len(o.Headers):len(o.Headers)], hs...)
	}
	u, _ := url.Parse(o.Endpoint)
	tc, err := tlsConfig(o, u.Scheme == "https")
	if err != nil {
		return nil, err
	}
	x := &Exporter{opt: o, name: "otlp:" + o.Endpoint, q: queue.New[record.Flow](o.Queue),
		enc:  newEncoder(resource(o.HostName, o.Interface, o.Version), o.Version, o.Body == BodyConnLog),
		stop: make(chan struct{}), done: make(chan struct{}), abandon: make(chan struct{}, 1)}
	x.health = health.New(x.name, o.Logger)
	switch o.Protocol {
	case ProtocolGRPC:
		if x.cl, err = newGRPCClient(u.Host, o, tc); err != nil {
			return nil, err
		}
	default:
		x.cl = newHTTPClient(o.Endpoint, o, tc)
	}
	if reg != nil {
		if err := reg.Register(metrics{x}); err != nil {
			x.cl.close()
			return nil, fmt.Errorf("register otlp metrics: %w", err)
		}
	}
	o.Health.Add(x.health)
	x.ctx, x.cancel = context.WithCancel(context.Background())
	go x.run()
	return x, nil
}

// readHeaders reads a headers file (Options.HeadersFile).
func readHeaders(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("otlp: headers file: %w", err)
	}
	var hs []string
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if _, _, msg := splitHeader(line); msg != "" {
			return nil, fmt.Errorf("%w: %s:%d: %s", ErrOptions, path, i+1, msg)
		}
		hs = append(hs, line)
	}
	return hs, nil
}

// WriteFlows queues flows. It does not wait, but with
// Options.WaitForRoom for room while the collector is not failing; the
// records the queue has no room for are dropped, counted and reported.
func (x *Exporter) WriteFlows(flows []record.Flow) error {
	var wait func() bool
	if x.opt.WaitForRoom {
		wait = func() bool { return !x.health.Failing() }
	}
	n := x.q.Put(flows, wait)
	if n > 0 {
		x.droppedQueue.Add(uint64(n))
		return x.report(uint64(n), fmt.Errorf("%w: %d records dropped", ErrQueueFull, n))
	}
	return x.report(0)
}

// report returns what WriteFlows and Flush say: nil when no record was
// lost since the last report (a failing collector's records wait in the
// queue), else the records failed and lost, with errs and the
// collector's error.
func (x *Exporter) report(failed uint64, errs ...error) error {
	lost := x.droppedRejected.Load() + x.droppedUnsent.Load()
	dropped := lost - x.reported
	x.reported = lost
	if failed == 0 && dropped == 0 {
		return nil
	}
	if err := x.health.Err(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		errs = append(errs, ErrRejected)
	}
	return &record.LossError{Failed: failed, Dropped: dropped, Err: errors.Join(errs...)}
}

// Flush sends what is queued, a partial batch too, waiting up to
// Options.FlushWait; with no FlushWait it does not wait, and only
// reports. The records still queued when the wait runs out are dropped
// and reported.
func (x *Exporter) Flush() error {
	if x.opt.FlushWait > 0 {
		if err := x.drain(x.opt.FlushWait); err != nil {
			return x.report(0, err)
		}
	}
	return x.report(0)
}

// drain waits until the records queued so far are sent, or wait passes;
// then it drops, counted, what is left: the batch being retried too,
// waiting for the request in flight (up to Options.Timeout), so that
// the counts after it add up.
func (x *Exporter) drain(wait time.Duration) error {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	if x.q.Drained(deadline.C) {
		return nil
	}
	x.droppedUnsent.Add(uint64(x.q.Discard()))
	select {
	case x.abandon <- struct{}{}:
	default:
	}
	inFlight := time.NewTimer(x.opt.Timeout + time.Second)
	defer inFlight.Stop()
	x.q.Drained(inFlight.C)
	return fmt.Errorf("%w (%v)", ErrFlushTimeout, wait.Round(time.Millisecond))
}

// Close sends what is queued (waiting up to Options.CloseWait), then
// stops the sender and closes the connection. The records left unsent
// are dropped, counted, and make its error.
func (x *Exporter) Close() error {
	var errs []error
	if x.opt.CloseWait > 0 {
		errs = append(errs, x.drain(x.opt.CloseWait))
	}
	close(x.stop)
	x.cancel()
	x.q.Signal(true)
	<-x.done
	if n := x.q.Discard(); n > 0 {
		x.droppedUnsent.Add(uint64(n))
		errs = append(errs, fmt.Errorf("%d records unsent at close: %w", n, ErrFlushTimeout))
	}
	errs = append(errs, x.cl.close())
	return errors.Join(errs...)
}

// run is the sender: it takes batches from the queue and exports each,
// retrying a failed request until it is taken, refused for good, or the
// exporter stops.
func (x *Exporter) run() {
	defer close(x.done)
	backoff := health.Backoff{Min: x.opt.minBackoff, Max: maxBackoff}
	for {
		flows := x.q.Take(x.opt.BatchSize, x.opt.BatchTimeout, x.stop)
		if flows == nil {
			return
		}
		select {
		case <-x.abandon: // for a batch sent since
		default:
		}
		req := x.enc.build(flows, uint64(time.Now().UnixNano()))
		for {
			rejected, err := x.export(req)
			if err == nil {
				rejected = min(max(rejected, 0), int64(len(flows)))
				x.sent.Add(uint64(len(flows)) - uint64(rejected))
				x.droppedRejected.Add(uint64(rejected))
				x.batches.Add(1)
				x.health.OK()
				backoff.Reset()
				break
			}
			if x.ctx.Err() != nil {
				x.q.Release(0) // stopped mid-request: the batch stays queued, for Close to count
				return
			}
			var se *sendError
			if !errors.As(err, &se) || !se.Retry {
				// Refused for good: sending it again would be refused
				// again. The next batch that goes says it works again.
				x.droppedRejected.Add(uint64(len(flows)))
				x.failed(fmt.Errorf("%w: %w", ErrRejected, err))
				break
			}
			x.retries.Add(1)
			x.failed(err)
			wait := backoff.Next()
			if se.After > wait {
				wait = min(se.After, maxRetryAfter)
			}
			if stopped, abandoned := x.sleep(wait); stopped {
				x.q.Release(0) // the batch stays queued, for Close to count
				return
			} else if abandoned {
				x.droppedUnsent.Add(uint64(len(flows)))
				break
			}
		}
		x.q.Release(len(flows))
	}
}

// export sends one request within the timeout.
func (x *Exporter) export(req *collogspb.ExportLogsServiceRequest) (int64, error) {
	ctx, cancel := context.WithTimeout(x.ctx, x.opt.Timeout)
	defer cancel()
	rejected, n, err := x.cl.export(ctx, req)
	x.bytes.Add(uint64(n))
	return rejected, err
}

// failed marks the collector failing; a failure that starts wakes a
// WriteFlows waiting for room, which drops instead.
func (x *Exporter) failed(err error) {
	starts := !x.health.Failing()
	x.health.Fail(err)
	if starts {
		x.q.Signal(false)
	}
}

// sleep waits d, and says whether the exporter stopped or a flush
// abandoned the batch meanwhile.
func (x *Exporter) sleep(d time.Duration) (stopped, abandoned bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return false, false
	case <-x.stop:
		return true, false
	case <-x.abandon:
		return false, true
	}
}

// Stats are the exporter's counts.
type Stats struct {
	Endpoint        string
	Up              bool
	Sent            uint64 // records the collector took
	Batches         uint64 // requests the collector took
	Retries         uint64 // requests sent again after a failure that may pass
	Bytes           uint64 // request bytes sent (compressed for OTLP/HTTP)
	DroppedQueue    uint64 // records dropped at a full queue
	DroppedRejected uint64 // records the collector refused for good
	DroppedUnsent   uint64 // records still queued when Flush or Close gave up
	Queued          int
}

// Dropped is every record dropped.
func (s Stats) Dropped() uint64 { return s.DroppedQueue + s.DroppedRejected + s.DroppedUnsent }

// Stats returns the exporter's counts.
func (x *Exporter) Stats() Stats {
	return Stats{Endpoint: x.opt.Endpoint, Up: !x.health.Failing(), Sent: x.sent.Load(), Batches: x.batches.Load(),
		Retries: x.retries.Load(), Bytes: x.bytes.Load(), DroppedQueue: x.droppedQueue.Load(),
		DroppedRejected: x.droppedRejected.Load(), DroppedUnsent: x.droppedUnsent.Load(), Queued: x.q.Len()}
}
