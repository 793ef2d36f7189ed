package ipfix

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/flowmon/flowmon/internal/health"
	"github.com/flowmon/flowmon/internal/queue"
	"github.com/flowmon/flowmon/record"
)

// batchLen is the most records a collector's goroutine takes from its
// queue at once: the pipeline's batch.
const batchLen = 256

// probeAfter is how long a UDP collector goes without a message before
// the next data goes out after the templates: a collector that went away
// meanwhile answers the templates with an ICMP port unreachable, which
// fails the data's write (on one host, at once) instead of letting it
// vanish; a collector restarted meanwhile gets the templates it lost.
const probeAfter = time.Second

// The backoff between attempts at a failing collector (health.Backoff:
// doubling, jittered).
const (
	minBackoff = 250 * time.Millisecond
	maxBackoff = 30 * time.Second
)

// errStopped is a write's error when Close stops a paced collector.
var errStopped = errors.New("ipfix: exporter closed")

// collector is one collector's queue, goroutine and connection.
type collector struct {
	addr string
	opt  Options
	q    *queue.Ring[record.Flow]
	pace *pacer // nil: not paced (TCP)
	stop chan struct{}
	done chan struct{}

	mu   sync.Mutex // guards conn against Close
	conn net.Conn
	enc  *encoder

	lastTemplates, lastWrite time.Time
	needTemplates            bool
	backoff                  health.Backoff

	// reported is the losses WriteFlows and Flush have reported (the
	// pipeline's goroutine's alone).
	reported uint64

	// health is the collector's component, "ipfix:ADDR": failing from a
	// dial or write that fails to the next connection (TCP) or write
	// (UDP) that works.
	health                             *health.Component
	records, droppedQueue, droppedSend atomic.Uint64
	// droppedRefused are the records of the last message before a UDP
	// write was refused: the ICMP port unreachable a write reports came
	// back for a message sent before it, most likely that one, which no
	// collector took. lastSent is its count (0 after templates).
	droppedRefused         atomic.Uint64
	lastSent               uint32
	droppedUnsent          atomic.Uint64
	messages, bytes        atomic.Uint64
	dialErrors, sendErrors atomic.Uint64
}

func newCollector(addr string, o Options) *collector {
	c := &collector{addr: addr, opt: o, q: queue.New[record.Flow](o.Queue),
		stop: make(chan struct{}), done: make(chan struct{}), backoff: health.Backoff{Min: o.minBackoff, Max: maxBackoff},
		health: health.New("ipfix:"+addr, o.Logger)}
	if o.Transport == TransportUDP {
		c.pace = newPacer(o.Rate)
	}
	return c
}

// failure is why the collector is failing, nil when it is not.
func (c *collector) failure() error { return c.health.Err() }

// queue copies flows into the queue, and returns how many found no room.
func (c *collector) queue(flows []record.Flow) int {
	var wait func() bool
	if c.opt.WaitForRoom {
		wait = func() bool { return !c.health.Failing() }
	}
	n := c.q.Put(flows, wait)
	c.droppedQueue.Add(uint64(n))
	return n
}

func (c *collector) run() {
	defer close(c.done)
	for {
		if !c.connected() && !c.connect() {
			return // stopped
		}
		flows := c.q.Take(batchLen, 0, c.stop)
		if flows == nil {
			return
		}
		c.q.Release(c.send(flows))
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
				c.recovered() // a UDP socket says nothing before a write
			}
			return true
		}
		c.dialErrors.Add(1)
		c.failed(err)
		if !c.wait() {
			return false
		}
	}
}

// send encodes flows and writes the messages, the templates first when
// they are due, and returns how many flows it is done with: all of them,
// or those before the message whose write failed (the rest stay queued,
// to be sent after the backoff).
func (c *collector) send(flows []record.Flow) int {
	now := time.Now()
	if c.opt.Transport == TransportUDP && (now.Sub(c.lastTemplates) >= c.opt.TemplateRefresh || now.Sub(c.lastWrite) >= probeAfter) {
		c.needTemplates = true
	}
	exportTime := uint32(now.Unix())
	if c.needTemplates {
		if err := c.write(c.enc.templateMessage(exportTime), 0); err != nil {
			c.lost(err)
			return 0
		}
		c.needTemplates, c.lastTemplates = false, now
	}
	done, lost, err := c.enc.encode(flows, exportTime, c.write)
	c.droppedSend.Add(lost)
	if err != nil {
		c.lost(err)
		return done
	}
	c.recovered()
	return done
}

// write writes one message of n data records, which count as sent, at
// the collector's pace.
func (c *collector) write(msg []byte, n uint32) error {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn == nil {
		return net.ErrClosed
	}
	if c.pace != nil && !c.pace.wait(n, c.stop) {
		return errStopped
	}
	if _, err := conn.Write(msg); err != nil {
		return err
	}
	c.lastWrite, c.lastSent = time.Now(), n
	c.messages.Add(1)
	c.bytes.Add(uint64(len(msg)))
	c.records.Add(uint64(n))
	return nil
}

// lost handles a failed write: a TCP connection is closed (the next
// batch reconnects and resends the templates), and the collector waits
// the backoff before it sends again.
func (c *collector) lost(err error) {
	if errors.Is(err, errStopped) {
		return
	}
	c.sendErrors.Add(1)
	if c.opt.Transport == TransportUDP && errors.Is(err, syscall.ECONNREFUSED) {
		c.droppedRefused.Add(uint64(c.lastSent))
	}
	c.lastSent = 0
	c.failed(err)
	c.needTemplates = true
	if c.opt.Transport == TransportTCP {
		c.closeConn()
	}
	c.wait()
}

// failed marks the collector failing; a failure that starts waits the
// backoff from its start.
func (c *collector) failed(err error) {
	starts := !c.health.Failing()
	c.health.Fail(err)
	if starts {
		c.backoff.Reset()
		c.q.Signal(false) // a WriteFlows waiting for room drops instead
	}
}

// recovered marks the collector up.
func (c *collector) recovered() { c.health.OK() }

// wait sleeps the backoff's next wait, and reports false when stopped
// meanwhile.
func (c *collector) wait() bool {
	t := time.NewTimer(c.backoff.Next())
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
