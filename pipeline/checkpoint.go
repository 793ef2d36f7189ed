package pipeline

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/internal/health"
	"github.com/flowmon/flowmon/internal/snapshot"
)

// A live run that snapshots its state only at its stop loses every open
// flow's state to a SIGKILL or the OOM killer. So it also snapshots every
// LiveOptions.SnapshotEvery while it runs: a crash then loses at most one
// interval.
//
// A snapshot's state must be one instant of every shard, and the flow
// records written must be exactly those of that instant: a restart that
// restores the state and keeps a record written after it would write that
// flow's record again when the flow ends. Each feeder owns its shard, so
// at a checkpoint every feeder pauses at its next batch boundary (an idle
// poll at the latest: the poll timeout bounds the wait), appends its
// shard's state into buffers of its own, and waits. With every shard
// paused, the records queued are delivered and flushed and the caller's
// mark (the flow log's end, synced) taken; the feeders then go on, and
// the snapshot is written while they run. The kernel holds what arrives
// during the pause in the capture rings: the pause is the wait for the
// idlest source's poll to return, the state's encoding and the flow log's
// fsync (docs/results/snapshots.md has a measured one).

// checkpoint is a live run's periodic snapshot: the barrier its feeders
// pause at, and its health.
type checkpoint struct {
	pending atomic.Bool // a checkpoint is wanted: feeders pause at their next batch

	mu     sync.Mutex
	n      int           // feeders
	paused int           // at the barrier
	exited int           // returned: they will not come
	all    chan struct{} // closed when paused+exited reaches n
	resume chan struct{} // closed when the paused feeders may go on

	stats snapshotStats
}

// snapshotStats are the periodic snapshots' counts and health, read by
// the metrics and /healthz from any goroutine.
type snapshotStats struct {
	written, failed atomic.Uint64
	lastOK          atomic.Int64 // unix ns of the last snapshot written
	pauseNs         atomic.Int64 // the last checkpoint's pause
	pauseTotalNs    atomic.Int64
	// health is the periodic snapshot's component ("snapshot"): failing
	// from a write that fails to the next that works.
	health *health.Component
	// restores counts the starts' restores by outcome (restoreResult).
	restores [nRestoreResults]atomic.Uint64
}

// restoreResult is what a start did with its snapshot.
type restoreResult uint8

const (
	restored   restoreResult = iota // taken over
	noSnapshot                      // none to take (a first start)
	refused                         // refused: damaged, other version or settings, stale
	nRestoreResults
)

var restoreResults = [nRestoreResults]string{"restored", "none", "refused"}

func newCheckpoint(feeders int, log *slog.Logger) *checkpoint {
	return &checkpoint{n: feeders, stats: snapshotStats{health: health.New("snapshot", log)}}
}

// begin asks the feeders to pause and returns what is closed once they
// all have (or returned).
func (c *checkpoint) begin() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused = 0
	c.all = make(chan struct{})
	c.resume = make(chan struct{})
	if c.exited == c.n {
		close(c.all)
	}
	c.pending.Store(true)
	return c.all
}

// release lets the paused feeders go on.
func (c *checkpoint) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending.Store(false)
	close(c.resume)
}

// arrive counts a feeder at the barrier and returns what it waits on.
func (c *checkpoint) arrive() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused++
	if c.paused+c.exited == c.n {
		close(c.all)
	}
	return c.resume
}

// exit counts a feeder that returned: no barrier waits for it any more.
func (c *checkpoint) exit() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.exited++
	if c.pending.Load() && c.paused+c.exited == c.n {
		close(c.all)
	}
}

// pause is a feeder's stop at the barrier, between batches: its batch
// run and its records queued, it appends its shard's state and waits
// until the checkpoint lets it go on.
func (f *feeder) pause(c *checkpoint) {
	f.flush()
	if f.s.out != nil {
		f.s.out.flush()
	}
	f.state, f.stateErr = f.s.appendSections(f.i, f.state[:0])
	<-c.arrive()
}

// checkpointEvery runs the periodic snapshots of a live run until stop is
// closed.
func (p *Pipeline) checkpointEvery(c *checkpoint, feeders []*feeder, opt LiveOptions, stop <-chan struct{}) {
	t := time.NewTicker(opt.SnapshotEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		p.checkpointOnce(c, feeders, opt)
	}
}

// checkpointOnce takes one periodic snapshot; a feeder that has returned
// cancels it (the run is stopping, and its stop saves the state).
func (p *Pipeline) checkpointOnce(c *checkpoint, feeders []*feeder, opt LiveOptions) {
	start := time.Now()
	<-c.begin()
	c.mu.Lock()
	exited := c.exited
	c.mu.Unlock()
	if exited > 0 {
		c.release()
		return
	}
	var sections []snapshot.Section
	var last time.Time
	var err error
	for _, f := range feeders {
		sections = append(sections, f.state...)
		err = errors.Join(err, f.stateErr)
		if f.last.After(last) {
			last = f.last
		}
	}
	if err == nil {
		sections, err = p.appendMark(sections, opt.Mark)
	}
	c.release()
	pause := time.Since(start)
	c.stats.pauseNs.Store(int64(pause))
	c.stats.pauseTotalNs.Add(int64(pause))
	if err == nil {
		h := snapshot.Header{Saved: time.Now(), PacketTime: last, Params: p.params()}
		err = snapshot.Write(opt.Snapshot, h, sections)
	}
	c.stats.result(err, opt.Snapshot)
}

// result counts a snapshot's outcome and reports it to the component.
func (s *snapshotStats) result(err error, path string) {
	if err != nil {
		s.failed.Add(1)
		s.health.Fail(fmt.Errorf("%s: %w", path, err))
		return
	}
	s.written.Add(1)
	s.lastOK.Store(time.Now().UnixNano())
	s.health.OK()
}

// SnapshotFailing returns the error of the live run's last periodic
// snapshot while it fails (nil while they work, or without them).
func (p *Pipeline) SnapshotFailing() error {
	if p.ckpt == nil {
		return nil
	}
	return p.ckpt.stats.health.Err()
}

var (
	descSnapshots = prometheus.NewDesc("flowmon_snapshots_total",
		"Periodic snapshots of the live state, by result (ok, failed); the stop's is not counted.", []string{"result"}, nil)
	descSnapshotLast = prometheus.NewDesc("flowmon_snapshot_last_success_timestamp_seconds",
		"When the last periodic snapshot was written (0: none yet): a crash loses the state since.", nil, nil)
	descSnapshotPause = prometheus.NewDesc("flowmon_snapshot_pause_seconds",
		"How long the last periodic snapshot paused the shards (the kernel's rings hold the packets meanwhile).", nil, nil)
	descSnapshotPauseTotal = prometheus.NewDesc("flowmon_snapshot_pause_seconds_total",
		"How long the periodic snapshots paused the shards in all.", nil, nil)
	descSnapshotRestores = prometheus.NewDesc("flowmon_snapshot_restores_total",
		"The start's snapshot, by result: restored, none (no file) or refused (damaged, another version or settings, stale: the run started empty).", []string{"result"}, nil)
)

// snapshotCollector exports a live run's periodic snapshots and what its
// start did with the snapshot it found; their health is
// flowmon_component_up{component="snapshot"}.
type snapshotCollector struct{ c *checkpoint }

func (s snapshotCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSnapshots, descSnapshotLast, descSnapshotPause, descSnapshotPauseTotal, descSnapshotRestores} {
		ch <- d
	}
}

func (s snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	st := &s.c.stats
	ch <- prometheus.MustNewConstMetric(descSnapshots, prometheus.CounterValue, float64(st.written.Load()), "ok")
	ch <- prometheus.MustNewConstMetric(descSnapshots, prometheus.CounterValue, float64(st.failed.Load()), "failed")
	last := 0.0
	if ns := st.lastOK.Load(); ns != 0 {
		last = float64(ns) / 1e9
	}
	ch <- prometheus.MustNewConstMetric(descSnapshotLast, prometheus.GaugeValue, last)
	ch <- prometheus.MustNewConstMetric(descSnapshotPause, prometheus.GaugeValue, time.Duration(st.pauseNs.Load()).Seconds())
	ch <- prometheus.MustNewConstMetric(descSnapshotPauseTotal, prometheus.CounterValue, time.Duration(st.pauseTotalNs.Load()).Seconds())
	for r, name := range restoreResults {
		ch <- prometheus.MustNewConstMetric(descSnapshotRestores, prometheus.CounterValue, float64(st.restores[r].Load()), name)
	}
}
