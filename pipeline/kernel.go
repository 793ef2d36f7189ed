package pipeline

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/internal/health"
	"github.com/flowmon/flowmon/pipeline/kernelflows"
)

// KernelStateSummary is the kernel flow state's account of a run: how
// many frames each side handled, and what became of the flows it kept.
type KernelStateSummary struct {
	// Frames is every frame the program saw, Datagrams among them
	// those reassembled in user space from fragments it left whole and
	// run through it again (their flows' other packets may be in its
	// cells); Counted those its flows'
	// cells took, Duplicates those its duplicate window held (left out,
	// as the dedup stage leaves them out; in Summary.Duplicates too),
	// ToUser those it left to user space whole (tunnels,
	// fragments, what it does not parse), InsertFailed those of new
	// flows that found its map full (counted, not kept) and Malformed
	// those it found broken (left to user space, which counts them by
	// reason).
	Frames       uint64 `json:"frames"`
	Datagrams    uint64 `json:"datagrams"`
	Counted      uint64 `json:"packets_counted"`
	Duplicates   uint64 `json:"duplicates"`
	ToUser       uint64 `json:"frames_to_user"`
	InsertFailed uint64 `json:"insert_failed"`
	Malformed    uint64 `json:"malformed"`
	// Flows is the flows it started, Answered those that left S0 (their
	// answered event read), Records those whose final record was
	// written, TimedOut those of them found idle by the sweep.
	Flows    uint64 `json:"flows"`
	Answered uint64 `json:"flows_answered"`
	Records  uint64 `json:"records"`
	TimedOut uint64 `json:"flows_timed_out"`
	// Events is the flow events read; EventsLost those the full ring did
	// not take, and RecordsLost the flows whose final counts went with
	// them.
	Events      uint64 `json:"events"`
	EventsLost  uint64 `json:"events_lost"`
	RecordsLost uint64 `json:"records_lost"`
	// Cells is the most flows its map holds, and MemoryBytes what the
	// kernel charges for its maps: both fixed by the settings.
	Cells       int    `json:"cells"`
	MemoryBytes uint64 `json:"memory_bytes"`
}

// finishKernel writes the records of the flows the kernel still holds,
// fills the summary's kernel keys and releases the program.
func (p *Pipeline) finishKernel(s *Summary, end time.Time) error {
	if p.kernel == nil {
		return nil
	}
	var err error
	if p.kernel.Live() {
		// No packet changes the cells from here: Finish writes them as
		// they are, at the wall clock's now (end is the last packet
		// user space read, none when the kernel kept every flow).
		err = p.kernel.Detach()
		end = time.Now()
	}
	if ferr := p.kernel.Finish(); err == nil {
		err = ferr
	}
	p.kcounter.Flush() // the last, partial window becomes the served one
	for _, c := range p.kcons {
		if cerr := c.Finish(end); cerr != nil && err == nil {
			err = cerr
		}
	}
	if p.kout != nil {
		p.kout.flush()
	}
	for k, v := range p.kernel.States() {
		s.ConnStates[k] += v
	}
	st, serr := p.kernel.Stats()
	if err == nil && serr != nil {
		err = serr
	}
	s.Flows += st.Started
	s.FlowsTimedOut += st.TimedOut
	s.KernelState = &KernelStateSummary{Frames: st.Seen, Datagrams: st.Datagrams, Counted: st.Counted, Duplicates: st.Duplicates, ToUser: st.Whole,
		InsertFailed: st.InsertFailed, Malformed: st.Malformed, Flows: st.Started, Answered: st.Answered, Records: st.Records,
		TimedOut: st.TimedOut, Events: st.Events, EventsLost: st.EventsLost, RecordsLost: st.RecordsLost, Cells: st.Cells,
		MemoryBytes: st.MemoryBytes}
	if cerr := p.kernel.Close(); err == nil && cerr != nil {
		err = cerr
	}
	p.kernel = nil
	if err != nil {
		return fmt.Errorf("finish the kernel flow state: %w", err)
	}
	return nil
}

// errNoFrames is a kernel-state replay's source that cannot hand frames
// over before decoding them.
var errNoFrames = errors.New("the kernel flow state needs a capture file's frames: this source decodes its own")

// kernelPoll is how often a live run reads the kernel flow state's
// events and ages its cells: polling, the reader wakes once for the
// events of 20 ms, where waiting on the ring it would be woken by each
// event that found it caught up, a context switch an event
// (docs/results/bpf.md, "Kernel flow state, live").
const kernelPoll = 20 * time.Millisecond

// runKernel reads a live run's kernel flow state until stop is closed:
// its events every kernelPoll, its cells aged by the kernel's clock
// (kernelflows.Table.Tick), its records handed to the sinks after each
// read, as a live shard hands its records after each batch; on a quiet
// link it tells the consumers the time (Consumer.Idle) and flushes the
// sinks.
func (p *Pipeline) runKernel(stop <-chan struct{}) error {
	tick := time.NewTicker(kernelPoll)
	defer tick.Stop()
	loss := newKernelLoss(p.cfg.Logger, p.cfg.Health)
	for {
		n, err := p.kernel.ReadEvents(0)
		if err == nil {
			err = p.kernel.Tick()
		}
		if err != nil {
			return fmt.Errorf("read the kernel flow state: %w", err)
		}
		if now := time.Now(); loss.due(now) {
			st, err := p.kernel.Stats()
			loss.check(st, err, now)
		}
		if p.kout != nil {
			p.kout.flush()
		}
		if n == 0 {
			now := time.Now()
			for _, c := range p.kcons {
				c.Idle(now)
			}
			p.sinks.flush()
		}
		if n >= kernelflows.MaxEventsRead {
			select {
			case <-stop:
				return nil
			default:
				continue // more in the ring
			}
		}
		select {
		case <-stop:
			return nil
		case <-tick.C:
		}
	}
}

// kernelLoss is the kernel flow state's health: it fails while the
// program loses flow events (its event ring full) or new flows (its map
// full), and works again once kernelLossQuiet passes without a loss.
type kernelLoss struct {
	c                      *health.Component
	next, quietAt          time.Time
	events, records, flows uint64
}

// kernelLossQuiet is how long without a loss the kernel flow state's
// health takes to be good again; kernelLossEvery how often it is read.
const (
	kernelLossQuiet = 10 * time.Second
	kernelLossEvery = time.Second
)

func newKernelLoss(log *slog.Logger, hr *health.Registry) *kernelLoss {
	l := &kernelLoss{c: health.New("kernel-state", log)}
	if hr != nil {
		hr.Add(l.c)
	}
	return l
}

// due reports whether the counts are to be read at now.
func (l *kernelLoss) due(now time.Time) bool {
	if now.Before(l.next) {
		return false
	}
	l.next = now.Add(kernelLossEvery)
	return true
}

// check takes the table's counts at now (err: they could not be read).
func (l *kernelLoss) check(st kernelflows.Stats, err error, now time.Time) {
	if err != nil {
		l.c.Fail(err)
		return
	}
	ev, rec, fl := st.EventsLost-l.events, st.RecordsLost-l.records, st.InsertFailed-l.flows
	l.events, l.records, l.flows = st.EventsLost, st.RecordsLost, st.InsertFailed
	switch {
	case ev > 0 || fl > 0:
		l.c.Fail(fmt.Errorf("%d flow events lost to a full event ring (%d flows' final counts with them), %d new flows not kept for a full map of %d cells, in the last %v",
			ev, rec, fl, st.Cells, kernelLossEvery))
		l.quietAt = now.Add(kernelLossQuiet)
	case now.After(l.quietAt):
		l.c.OK()
	}
}

var (
	descKStateCells = prometheus.NewDesc("flowmon_kernel_state_cells",
		"Flows the kernel flow state's map holds.", nil, nil)
	descKStateCellsMax = prometheus.NewDesc("flowmon_kernel_state_cells_max",
		"Flows the kernel flow state's map can hold (its memory is fixed).", nil, nil)
	descKStateFrames = prometheus.NewDesc("flowmon_kernel_state_frames_total",
		"Frames the kernel flow state's program saw.", nil, nil)
	descKStateCounted = prometheus.NewDesc("flowmon_kernel_state_counted_packets_total",
		"Packets the kernel flow state's cells took.", nil, nil)
	descKStateToUser = prometheus.NewDesc("flowmon_kernel_state_frames_to_user_total",
		"Frames the kernel flow state left to user space whole (tunnels, fragments, what it does not parse).", nil, nil)
	descKStateInsertFailed = prometheus.NewDesc("flowmon_kernel_state_insert_failures_total",
		"New flows the kernel flow state's full map had no cell for (their packets counted, not kept).", nil, nil)
	descKStateEventsSent = prometheus.NewDesc("flowmon_kernel_state_events_sent_total",
		"Flow events the kernel flow state made (starts, ends, done flows, interim records), lost ones included.", nil, nil)
	descKStateEvents = prometheus.NewDesc("flowmon_kernel_state_events_total",
		"Flow events flowmon read from the kernel flow state's ring.", nil, nil)
	descKStateEventsLost = prometheus.NewDesc("flowmon_kernel_state_events_lost_total",
		"Flow events the kernel flow state's full event ring refused.", nil, nil)
	descKStateRecordsLost = prometheus.NewDesc("flowmon_kernel_state_records_lost_total",
		"Flows whose final counts went with a lost event: their records are missing.", nil, nil)
)

// kernelStateCollector exports the kernel flow state's counts at scrape
// time.
type kernelStateCollector struct{ t *kernelflows.Table }

func (c kernelStateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descKStateCells, descKStateCellsMax, descKStateFrames, descKStateCounted,
		descKStateToUser, descKStateInsertFailed, descKStateEventsSent, descKStateEvents, descKStateEventsLost, descKStateRecordsLost} {
		ch <- d
	}
}

func (c kernelStateCollector) Collect(ch chan<- prometheus.Metric) {
	st, err := c.t.Stats()
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(descKStateCells, prometheus.GaugeValue, float64(st.CellsInUse))
	ch <- prometheus.MustNewConstMetric(descKStateCellsMax, prometheus.GaugeValue, float64(st.Cells))
	for _, m := range []struct {
		d *prometheus.Desc
		v uint64
	}{{descKStateFrames, st.Seen}, {descKStateCounted, st.Counted}, {descKStateToUser, st.Whole},
		{descKStateInsertFailed, st.InsertFailed}, {descKStateEventsSent, st.EventsSent}, {descKStateEvents, st.Events},
		{descKStateEventsLost, st.EventsLost},
		{descKStateRecordsLost, st.RecordsLost}} {
		ch <- prometheus.MustNewConstMetric(m.d, prometheus.CounterValue, float64(m.v))
	}
}
