package ipfix

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/record"
)

// batchLen is the most records a queued batch holds: the pipeline's
// batch.
const batchLen = 256

// The backoff between attempts at a failing collector.
const (
	minBackoff = 250 * time.Millisecond
	maxBackoff = 30 * time.Second
)

// ErrFlushTimeout is Flush's and Close's error when a queue has not
// drained within the wait.
var ErrFlushTimeout = errors.New("ipfix: queue not drained in time")

// Exporter is a record.Sink sending records to IPFIX collectors. The
// pipeline calls WriteFlows and Flush from one goroutine; the metrics
// may be collected from any.
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
	for i, addr := range o.Collectors {
		x.cols = append(x.cols, newCollector(i, addr, o))
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

// WriteFlows queues flows for every collector without waiting: the
// records a full queue has no room for are dropped and counted.
func (x *Exporter) WriteFlows(flows []record.Flow) error {
	flows = x.deltas(flows)
	for _, c := range x.cols {
		c.queue(flows)
	}
	return nil
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

// Flush waits, up to Options.FlushWait, for every collector's queue to
// be sent; records are never held back between batches, so with no
// wait it does nothing.
func (x *Exporter) Flush() error {
	if x.opt.FlushWait <= 0 {
		return nil
	}
	return x.drain(x.opt.FlushWait)
}

// drain waits until every queue queued so far is sent, or wait passes.
func (x *Exporter) drain(wait time.Duration) error {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	dones := make([]chan struct{}, len(x.cols))
	for i, c := range x.cols {
		dones[i] = make(chan struct{})
		select {
		case c.items <- item{flushed: dones[i]}:
		case <-deadline.C:
			return fmt.Errorf("collector %s: %w (%v)", c.addr, ErrFlushTimeout, wait)
		}
	}
	for i, c := range x.cols {
		select {
		case <-dones[i]:
		case <-deadline.C:
			return fmt.Errorf("collector %s: %w (%v)", c.addr, ErrFlushTimeout, wait)
		}
	}
	return nil
}

// Close sends what is queued (waiting up to Options.CloseWait), then
// stops the collectors' goroutines and closes their connections.
func (x *Exporter) Close() error {
	var err error
	if x.opt.CloseWait > 0 {
		err = x.drain(x.opt.CloseWait)
	}
	for _, c := range x.cols {
		close(c.stop)
	}
	for _, c := range x.cols {
		c.closeConn()
		<-c.done
	}
	return err
}

// CollectorStats is one collector's counts.
type CollectorStats struct {
	Addr                   string
	Up                     bool
	Records                uint64 // data records sent
	DroppedQueue           uint64 // records dropped at a full queue
	DroppedSend            uint64 // records in messages whose write failed
	Messages, Bytes        uint64 // sent, templates included
	DialErrors, SendErrors uint64
	QueuedBatches          int
}

// Stats returns each collector's counts, in Options.Collectors' order.
func (x *Exporter) Stats() []CollectorStats {
	out := make([]CollectorStats, len(x.cols))
	for i, c := range x.cols {
		out[i] = CollectorStats{Addr: c.addr, Up: c.up.Load(), Records: c.records.Load(),
			DroppedQueue: c.droppedQueue.Load(), DroppedSend: c.droppedSend.Load(),
			Messages: c.messages.Load(), Bytes: c.bytes.Load(),
			DialErrors: c.dialErrors.Load(), SendErrors: c.sendErrors.Load(), QueuedBatches: len(c.items)}
	}
	return out
}

// item is a batch to send, or a marker closed once what was queued
// before it is sent.
type item struct {
	flows   []record.Flow
	flushed chan struct{}
}

// collector is one collector's queue, goroutine and connection.
type collector struct {
	idx  int
	addr string
	opt  Options
	log  *slog.Logger

	items chan item
	free  chan []record.Flow
	stop  chan struct{}
	done  chan struct{}

	mu   sync.Mutex // guards conn against Close
	conn net.Conn
	enc  *encoder

	lastTemplates time.Time
	needTemplates bool
	failing       bool
	failedAt      time.Time
	backoff       time.Duration
	minBackoff    time.Duration

	up                                 atomic.Bool
	records, droppedQueue, droppedSend atomic.Uint64
	messages, bytes                    atomic.Uint64
	dialErrors, sendErrors             atomic.Uint64
}

func newCollector(idx int, addr string, o Options) *collector {
	c := &collector{idx: idx, addr: addr, opt: o, log: o.Logger.With("collector", addr, "transport", o.Transport),
		items: make(chan item, o.Queue+1), free: make(chan []record.Flow, o.Queue),
		stop: make(chan struct{}), done: make(chan struct{}), minBackoff: o.minBackoff}
	for range o.Queue {
		c.free <- make([]record.Flow, 0, batchLen)
	}
	return c
}

// queue copies flows into free batches, dropping what finds none.
func (c *collector) queue(flows []record.Flow) {
	for len(flows) > 0 {
		n := min(len(flows), batchLen)
		select {
		case b := <-c.free:
			c.items <- item{flows: append(b[:0], flows[:n]...)}
		default:
			c.droppedQueue.Add(uint64(n))
		}
		flows = flows[n:]
	}
}

func (c *collector) run() {
	defer close(c.done)
	for {
		if !c.connected() && !c.connect() {
			return // stopped
		}
		var it item
		select {
		case it = <-c.items:
		case <-c.stop:
			return
		}
		if it.flushed != nil {
			close(it.flushed)
			continue
		}
		c.send(it.flows)
		c.free <- it.flows[:0]
	}
}

func (c *collector) connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conn != nil
}

// connect dials until it succeeds, waiting the backoff between
// attempts; it returns false when stopped.
func (c *collector) connect() bool {
	for {
		select {
		case <-c.stop:
			return false
		default:
		}
		conn, err := net.DialTimeout(c.opt.Transport, c.addr, 5*time.Second)
		if err == nil {
			c.mu.Lock()
			c.conn = conn
			c.mu.Unlock()
			if c.enc == nil {
				c.enc = newEncoder(encoderOptions{biflow: c.opt.Mode == ModeBiflow, enterprise: c.opt.EnterpriseNumber,
					domain: c.opt.ObservationDomain, ingress: c.opt.IngressInterface,
					maxMessage: maxMessage(c.opt.MTU, c.opt.Transport, conn.RemoteAddr())})
			}
			c.needTemplates = true
			if c.opt.Transport == TransportTCP {
				c.recovered()
			} else {
				c.up.Store(!c.failing)
			}
			return true
		}
		c.dialErrors.Add(1)
		c.failed("dial", err)
		if !c.wait() {
			return false
		}
	}
}

// send encodes flows and writes the messages, the templates first when
// they are due.
func (c *collector) send(flows []record.Flow) {
	now := time.Now()
	if c.opt.Transport == TransportUDP && now.Sub(c.lastTemplates) >= c.opt.TemplateRefresh {
		c.needTemplates = true
	}
	exportTime := uint32(now.Unix())
	if c.needTemplates {
		if err := c.write(c.enc.templateMessage(exportTime), 0); err != nil {
			c.droppedSend.Add(c.enc.records(flows))
			c.lost(err)
			return
		}
		c.needTemplates, c.lastTemplates = false, now
	}
	lost, err := c.enc.encode(flows, exportTime, c.write)
	c.droppedSend.Add(lost)
	if err != nil {
		c.lost(err)
		return
	}
	c.recovered()
}

// write writes one message of n data records, which count as sent.
func (c *collector) write(msg []byte, n uint32) error {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn == nil {
		return net.ErrClosed
	}
	if _, err := conn.Write(msg); err != nil {
		return err
	}
	c.messages.Add(1)
	c.bytes.Add(uint64(len(msg)))
	c.records.Add(uint64(n))
	return nil
}

// lost handles a failed write: a TCP connection is closed (the next
// batch reconnects and resends the templates), and the collector waits
// the backoff before it sends again.
func (c *collector) lost(err error) {
	c.sendErrors.Add(1)
	c.failed("send", err)
	c.needTemplates = true
	if c.opt.Transport == TransportTCP {
		c.closeConn()
	}
	c.wait()
}

// failed marks the collector down, logging the first failure of a
// series.
func (c *collector) failed(op string, err error) {
	c.up.Store(false)
	if !c.failing {
		c.failing, c.failedAt, c.backoff = true, time.Now(), c.minBackoff
		c.log.Warn("ipfix collector failing; retrying with backoff", "op", op, "err", err)
		return
	}
	c.backoff = min(2*c.backoff, maxBackoff)
}

// recovered marks the collector up, logging the end of a failure.
func (c *collector) recovered() {
	c.up.Store(true)
	if c.failing {
		c.failing = false
		c.log.Info("ipfix collector recovered", "down_for", time.Since(c.failedAt).Round(time.Millisecond),
			"dropped_records", c.droppedQueue.Load()+c.droppedSend.Load())
	}
}

// wait sleeps the backoff, and reports false when stopped meanwhile.
func (c *collector) wait() bool {
	t := time.NewTimer(c.backoff)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.stop:
		return false
	}
}

func (c *collector) closeConn() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}
