package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/snapshot"
)

// A live pipeline has one source per shard. AF_PACKET's fanout has already
// split the traffic by flow over one socket per worker (the kernel's flow
// hash is symmetric, so both directions of a flow reach one socket, and a
// packet's duplicates with it), so each socket feeds its shard on a
// goroutine of its own: no packet crosses goroutines, where a replay's
// single reader hands every packet over (Pipeline.Packet). Which shard
// holds a flow is the kernel's choice instead of shardOf's; no result
// depends on it but the order of the flow records, which in a live run
// are written as the shards end their flows.

// kernelReadEvery is how often a live run reads the kernel's counts.
const kernelReadEvery = time.Minute

// NewLivePipeline builds a pipeline whose shard i is fed by srcs[i] on a
// goroutine of its own when RunLive runs it; cfg.Workers is ignored (one
// shard per source). Each source must deliver every packet of its flows,
// both directions: a shard sees only its own source.
func NewLivePipeline(cfg Config, srcs []capture.LiveSource) (*Pipeline, error) {
	if len(srcs) == 0 {
		return nil, errors.New("build live pipeline: no source")
	}
	if cfg.DecodeOnly {
		return nil, errors.New("build live pipeline: decode-only is for replays")
	}
	p, err := newPipeline(cfg, srcs)
	if err != nil {
		return nil, err
	}
	p.liveStats = make([]capture.Stats, len(srcs))
	p.ckpt = newCheckpoint(len(srcs), cfg.Logger)
	p.srcStates = newSourceStates(srcs, cfg.Logger, cfg.Health)
	return p, nil
}

// LiveOptions configure RunLive.
type LiveOptions struct {
	Progress *Progress // may be nil: packets read, summed over the sources
	// Snapshot, when set, is where the pipeline's state is written when
	// the run stops (snapshot.go): the flows still open are then carried
	// in it rather than reported as ended.
	Snapshot string
	// SnapshotEvery, with Snapshot, also writes it this often while the
	// run goes on (checkpoint.go); 0: only at the stop.
	SnapshotEvery time.Duration
	// Mark, with Snapshot, is called at each snapshot once every record
	// of the state's instant is delivered and flushed; what it returns
	// (the flow log's end) is kept in the snapshot, Restored.Mark.
	Mark func() ([]byte, error)
}

// RunLive runs pl (NewLivePipeline) until ctx is done or every source has
// ended, and returns the summary: the same keys as a replay's, the
// capture counts summed over the sources, and the kernel's counts for
// sources that keep them. A source that fails ends the run with its
// error, after the others have stopped; the summary holds everything
// read. A source whose interface goes down or away does not end the
// run: its feeder waits for the interface, reopening the source when it
// is made again (livesource.go). RunLive does not close the sources.
func RunLive(ctx context.Context, pl *Pipeline, opt LiveOptions) (*Summary, error) {
	if pl.live == nil {
		return nil, errors.New("run live: not a live pipeline (NewLivePipeline)")
	}
	start := time.Now()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	feeders := make([]*feeder, len(pl.live))
	var wg sync.WaitGroup
	for i := range pl.live {
		if pl.cfg.Decode != nil {
			pl.live[i].SetDecodeOptions(*pl.cfg.Decode)
		}
		f := &feeder{p: pl, i: i, src: pl.live[i], s: pl.shards[i], prog: opt.Progress,
			w: newIfaceWatch(pl.live[i], &pl.srcStates[i], i, pl.cfg.Logger)}
		feeders[i] = f
	}
	var ckpt *checkpoint
	if opt.Snapshot != "" && opt.SnapshotEvery > 0 {
		ckpt = pl.ckpt
		pl.cfg.Health.Add(ckpt.stats.health)
	}
	for _, f := range feeders {
		f.ckpt = ckpt
		wg.Go(func() {
			defer f.exit()
			if err := f.run(ctx); err != nil {
				f.err = err
				cancel(err) // one source failing stops the others
			}
		})
	}
	// A live kernel flow state is read on a goroutine of its own: its
	// events come from every CPU through one ring, apart from the
	// frames the feeder reads.
	var kwg sync.WaitGroup
	kstop := make(chan struct{})
	var kerr error
	if pl.kernel != nil && pl.kernel.Live() {
		kwg.Go(func() {
			if err := pl.runKernel(kstop); err != nil {
				kerr = err
				cancel(err)
			}
		})
	}
	ckptDone := make(chan struct{})
	stopCkpt := make(chan struct{})
	if ckpt != nil {
		go func() {
			defer close(ckptDone)
			pl.checkpointEvery(ckpt, feeders, opt, stopCkpt)
		}()
	} else {
		close(ckptDone)
	}
	// Read the kernel's counts now and then while running: libpcap's are
	// 32 bits, widened only if read before they wrap (71 minutes at
	// 1 Mpps); a scrape reads them too, but a run need not be scraped.
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(kernelReadEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				pl.KernelStats()
			}
		}
	}()
	wg.Wait()
	close(kstop)
	kwg.Wait()
	close(done)
	close(stopCkpt)
	<-ckptDone // the stop's snapshot is not written over by a periodic one
	s := &Summary{}
	var err error
	var st capture.Stats
	for _, f := range feeders {
		st.Add(f.src.Stats())
		if f.err != nil && err == nil {
			err = fmt.Errorf("capture on source %d: %w", f.i, f.err)
		}
		if !f.first.IsZero() && (s.TraceStart.IsZero() || f.first.Before(s.TraceStart)) {
			s.TraceStart = f.first
		}
		if f.last.After(s.TraceEnd) {
			s.TraceEnd = f.last
		}
	}
	if kerr != nil && err == nil {
		err = kerr
	}
	if err != nil {
		s.ReadError = err.Error()
	}
	s.fill(&st)
	pl.publish(&st) // the feeders have stopped: their shards publish here
	if ks, ok := pl.KernelStats(); ok {
		s.KernelPackets, s.KernelDrops = &ks.Packets, &ks.Drops
		s.KernelFreezes, s.KernelIfDrops = &ks.FreezeQueue, &ks.IfDrops
	}
	s.EBPF = pl.ebpfSummary()
	if n := pl.sourceStops(); n > 0 {
		s.SourceStops = &n
	}
	s.RestoredFlows = pl.restored
	if opt.Snapshot != "" {
		carried, serr := pl.SaveSnapshot(opt.Snapshot, s.TraceEnd, opt.Mark)
		if serr != nil {
			err = errors.Join(err, serr)
		} else {
			s.SnapshotFlows = &carried
		}
	}
	if ferr := pl.Finish(s, s.TraceEnd); ferr != nil && err == nil {
		err = ferr
	}
	s.timed(start)
	return s, err
}

// feeder reads one source into its shard, on its own goroutine.
type feeder struct {
	p    *Pipeline
	i    int
	src  capture.LiveSource
	s    *shard
	b    batch
	prog *Progress
	w    *ifaceWatch

	first, last time.Time // packet times seen
	batchStart  int64     // packet time of the batch's first packet
	err         error

	// ckpt is the run's periodic snapshot (nil: none); state and
	// stateErr are the shard's state a checkpoint took, kept for the next.
	ckpt     *checkpoint
	state    []snapshot.Section
	stateErr error
}

// exit tells the checkpoint, if any, that the feeder has returned.
func (f *feeder) exit() {
	if f.ckpt != nil {
		f.ckpt.exit()
	}
}

// liveDrain bounds how long a stopping feeder goes on reading what the
// kernel had already put in its ring: it stops at the first poll that
// finds the ring empty, or after this long under traffic that does not
// pause.
const liveDrain = 500 * time.Millisecond

func (f *feeder) run(ctx context.Context) error {
	var pk capture.Packet
	var counted uint64   // packets added to prog
	var stopBy time.Time // once ctx is done: when to stop draining
	stop := func() bool {
		if ctx.Err() == nil {
			return false
		}
		if stopBy.IsZero() {
			stopBy = time.Now().Add(liveDrain)
		}
		return time.Now().After(stopBy)
	}
	// An interface down when the run begins is a stop too.
	f.w.check(time.Now(), true)
	for {
		err := f.src.Next(&pk)
		switch {
		case err == nil:
		case errors.Is(err, capture.ErrNoPacket), isIfaceDown(err) && f.w.src != nil:
			f.flush()
			now := time.Now()
			if now.After(f.last) {
				f.s.idle(now)
				if f.s.out != nil {
					f.s.out.flush()
					f.p.sinks.flush()
				}
			}
			counted = f.publish(counted)
			if ctx.Err() != nil {
				return nil //nolint:nilerr // err is no packet or a down interface, no failure: a cancelled run ends cleanly
			}
			if f.ckpt != nil && f.ckpt.pending.Load() {
				f.pause(f.ckpt)
			}
			down := !errors.Is(err, capture.ErrNoPacket)
			f.w.check(now, down)
			if down {
				f.w.wait(ctx.Done())
			}
			continue
		case errors.Is(err, io.EOF):
			f.flush()
			f.publish(counted)
			return nil
		default:
			f.flush()
			f.publish(counted)
			return err
		}
		if f.first.IsZero() {
			f.first = pk.Timestamp
		}
		if pk.Timestamp.After(f.last) {
			f.last = pk.Timestamp
		}
		f.add(&pk)
		if f.b.n == 0 { // the batch went to the stages
			counted = f.publish(counted)
			if stop() {
				return nil
			}
			if f.ckpt != nil && f.ckpt.pending.Load() {
				f.pause(f.ckpt)
			}
		}
	}
}

// add puts pk in the batch, as Pipeline.Packet does, and runs the batch
// when it is full or its first packet has waited batchSpan (packet time),
// so a packet on a light link is not held back; the batch also goes
// whenever the source has been idle for its poll timeout
// (capture.ErrNoPacket).
func (f *feeder) add(pk *capture.Packet) {
	now := pk.Timestamp.UnixNano()
	if f.b.n == 0 {
		f.batchStart = now
	}
	if f.b.add(pk, f.p.fingerprint(pk), 0) || now-f.batchStart >= batchSpan {
		f.runBatch()
	}
}

func (f *feeder) flush() {
	if f.b.n > 0 {
		f.runBatch()
	}
}

// runBatch runs the batch and hands the records it wrote to the sinks, so that
// a record waits for no more than its batch.
func (f *feeder) runBatch() {
	f.s.run(&f.b)
	if f.s.out != nil {
		f.s.out.flush()
	}
}

// publish copies the shard's and the source's counters for the metrics
// and adds the packets read since counted to the progress; it returns
// the packets read.
func (f *feeder) publish(counted uint64) uint64 {
	f.s.publish(0)
	st := f.src.Stats()
	f.p.pub.mu.Lock()
	f.p.liveStats[f.i] = *st
	f.p.pub.capture = capture.Stats{}
	for i := range f.p.liveStats {
		f.p.pub.capture.Add(&f.p.liveStats[i])
	}
	f.p.pub.mu.Unlock()
	if f.prog != nil {
		f.prog.Packets.Add(st.Packets - counted)
	}
	return st.Packets
}

// KernelStats sums the kernel's counts over the sources whose counts
// could be read; ok is false when none could.
func (p *Pipeline) KernelStats() (ks capture.KernelStats, ok bool) {
	p.kernelMu.Lock()
	defer p.kernelMu.Unlock()
	for _, src := range p.live {
		s, err := src.KernelStats()
		if err != nil {
			continue
		}
		ks.Add(s)
		ok = true
	}
	return ks, ok
}

var (
	descKernelPackets = prometheus.NewDesc("flowmon_capture_kernel_packets_total",
		"Packets the kernel handed the capture sockets (AF_PACKET's PACKET_STATISTICS, libpcap's received), dropped ones included.", nil, nil)
	descKernelDrops = prometheus.NewDesc("flowmon_capture_kernel_drops_total",
		"Packets the kernel dropped because a capture ring was full: flowmon did not keep up.", nil, nil)
	descKernelFreezes = prometheus.NewDesc("flowmon_capture_kernel_ring_freezes_total",
		"Times a capture ring filled and the kernel froze it until flowmon returned a block (AF_PACKET's tp_freeze_q_cnt; 0 for libpcap).", nil, nil)
	descKernelIfDrops = prometheus.NewDesc("flowmon_capture_kernel_interface_drops_total",
		"Packets the interface or its driver dropped before the capture saw them (libpcap's ps_ifdrop; 0 for AF_PACKET, which cannot see them).", nil, nil)
)

// kernelCollector exports a live pipeline's kernel counts at scrape time:
// every count capture.KernelStats keeps.
type kernelCollector struct{ p *Pipeline }

func (c kernelCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descKernelPackets
	ch <- descKernelDrops
	ch <- descKernelFreezes
	ch <- descKernelIfDrops
}

func (c kernelCollector) Collect(ch chan<- prometheus.Metric) {
	ks, ok := c.p.KernelStats()
	if !ok {
		return
	}
	for _, m := range []struct {
		d *prometheus.Desc
		v uint64
	}{{descKernelPackets, ks.Packets}, {descKernelDrops, ks.Drops}, {descKernelFreezes, ks.FreezeQueue}, {descKernelIfDrops, ks.IfDrops}} {
		ch <- prometheus.MustNewConstMetric(m.d, prometheus.CounterValue, float64(m.v))
	}
}

// EBPFStats sums the eBPF program's counts over the sources it feeds
// (each reads its own ring; capture.LiveSource.EBPFStats), with the
// sampling and the attach point the sources share; ok is false when no
// source is one of its.
func (p *Pipeline) EBPFStats() (st capture.EBPFStats, ok bool) {
	p.kernelMu.Lock()
	defer p.kernelMu.Unlock()
	for _, src := range p.live {
		rs, isE := src.EBPFStats()
		if !isE {
			continue
		}
		st.Counters.Add(rs.Counters)
		st.SampleOneIn, st.Attached = rs.SampleOneIn, rs.Attached
		ok = true
	}
	return st, ok
}

// ebpfSummary is the summary's part for the eBPF program, nil when no
// source is its.
func (p *Pipeline) ebpfSummary() *EBPFSummary {
	st, ok := p.EBPFStats()
	if !ok {
		return nil
	}
	c := &st.Counters
	s := &EBPFSummary{Seen: c.Seen, Emitted: c.Emitted, Raw: c.Raw, Lost: c.Lost, SampledOut: c.SampledOut,
		FilteredOut: c.FilteredOut, ParseFailures: c.FailureCounts(), Attached: st.Attached}
	if st.SampleOneIn > 1 {
		s.SampleOneIn = st.SampleOneIn
	}
	return s
}

var (
	descEBPFSeen = prometheus.NewDesc("flowmon_capture_ebpf_seen_packets_total",
		"Packets the eBPF capture program saw at its hook.", nil, nil)
	descEBPFEmitted = prometheus.NewDesc("flowmon_capture_ebpf_emitted_records_total",
		"Records the eBPF capture program wrote into its ring buffers.", nil, nil)
	descEBPFRaw = prometheus.NewDesc("flowmon_capture_ebpf_raw_records_total",
		"Records of frames the eBPF capture program handed up whole for user space to decode (tunnels, link layers it does not parse); of emitted_records.", nil, nil)
	descEBPFLost = prometheus.NewDesc("flowmon_capture_ebpf_lost_records_total",
		"Records the eBPF capture program could not write because a ring buffer was full: flowmon did not keep up.", nil, nil)
	descEBPFSampledOut = prometheus.NewDesc("flowmon_capture_ebpf_sampled_out_packets_total",
		"Packets the eBPF capture program left out by sampling (their flow not among the 1 in N kept).", nil, nil)
	descEBPFFilteredOut = prometheus.NewDesc("flowmon_capture_ebpf_filtered_out_packets_total",
		"Packets the eBPF capture program's pre-filter (CIDRs, ports) left out.", nil, nil)
	descEBPFParseFailures = prometheus.NewDesc("flowmon_capture_ebpf_parse_failures_total",
		"Frames the eBPF capture program could not parse into a flow packet, by reason.", []string{"reason"}, nil)
	descEBPFSample = prometheus.NewDesc("flowmon_capture_ebpf_sample_one_in",
		"The eBPF capture program keeps 1 flow in this many (1: every flow).", nil, nil)
)

// ebpfCollector exports the eBPF capture program's counts at scrape time,
// every one it keeps.
type ebpfCollector struct{ p *Pipeline }

func (c ebpfCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descEBPFSeen, descEBPFEmitted, descEBPFRaw, descEBPFLost,
		descEBPFSampledOut, descEBPFFilteredOut, descEBPFParseFailures, descEBPFSample} {
		ch <- d
	}
}

func (c ebpfCollector) Collect(ch chan<- prometheus.Metric) {
	st, ok := c.p.EBPFStats()
	if !ok {
		return
	}
	ec := &st.Counters
	for _, m := range []struct {
		d *prometheus.Desc
		v uint64
	}{{descEBPFSeen, ec.Seen}, {descEBPFEmitted, ec.Emitted}, {descEBPFRaw, ec.Raw}, {descEBPFLost, ec.Lost},
		{descEBPFSampledOut, ec.SampledOut}, {descEBPFFilteredOut, ec.FilteredOut}} {
		ch <- prometheus.MustNewConstMetric(m.d, prometheus.CounterValue, float64(m.v))
	}
	for _, r := range capture.Reasons() {
		ch <- prometheus.MustNewConstMetric(descEBPFParseFailures, prometheus.CounterValue, float64(ec.Failures[r]), r.String())
	}
	ch <- prometheus.MustNewConstMetric(descEBPFSample, prometheus.GaugeValue, float64(st.SampleOneIn))
}

// Status is a running live pipeline's figures for its status line.
type Status struct {
	OpenFlows uint64 // flows in the shards' tables, as last published
	Kernel    capture.KernelStats
}

// Status reads the live figures; any goroutine may call it.
func (p *Pipeline) Status() Status {
	var st Status
	for _, s := range p.shards {
		st.OpenFlows += s.flowTableCounts().open
	}
	if k := p.kernelTable; k != nil {
		if ks, err := k.Stats(); err == nil {
			st.OpenFlows += ks.CellsInUse
		}
	}
	st.Kernel, _ = p.KernelStats()
	return st
}
