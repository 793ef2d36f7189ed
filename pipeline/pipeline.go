package pipeline

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/capture/defrag"
	"github.com/flowmon/flowmon/filters/recent"
	"github.com/flowmon/flowmon/internal/health"
	"github.com/flowmon/flowmon/kbf"
	"github.com/flowmon/flowmon/pipeline/dedup"
	"github.com/flowmon/flowmon/pipeline/flowcount"
	"github.com/flowmon/flowmon/pipeline/flowtable"
	"github.com/flowmon/flowmon/pipeline/kernelflows"
	"github.com/flowmon/flowmon/record"
)

// Config configures the stages of a pipeline.
type Config struct {
	// Dedup drops capture duplicates before anything counts (NoDedup turns
	// the stage off). Each shard runs its own, sized for its share of
	// PacketsPerWindow (dedup.Config.Share).
	Dedup   dedup.Config
	NoDedup bool
	// Defrag reassembles IP fragments in each source that can
	// (capture.DefragSource), with a reassembler of these bounds each
	// (NoDefrag: fragments are flow packets of their own, keyed as
	// capture.Decode keys them).
	Defrag   defrag.Config
	NoDefrag bool
	// ACSM tracks every flow's TCP state; Capacity is split over the
	// workers.
	ACSM acsm.Config
	// FlowCount counts packets per flow per window.
	FlowCount flowcount.Options
	// MaxFlows bounds the replay's table of open flows (records and
	// counts); past it the longest-idle flows are timed out early.
	MaxFlows int
	// Workers is the number of goroutines the per-flow stages are sharded
	// over by flow hash (0 or 1: all on the reading goroutine). Results do
	// not depend on it, except the order of the flow records; for a given
	// number of workers the records are the same, in the same order, from
	// run to run (records.go).
	Workers int
	// DecodeOnly runs no stage at all: the replay reads, decodes and
	// counts packets by type (flows and conn_states stay empty). It
	// measures the packet path's floor.
	DecodeOnly bool
	// Sinks receive a record of every flow (record.Flow): when it ends,
	// and for flows still open at the end of the replay. The flow table
	// keeps the records' fields only when there is a sink.
	Sinks []record.Named
	// CommunityIDSeed seeds the records' Community IDs (record.Flow).
	CommunityIDSeed uint16
	// ActiveTimeout, when not 0 (whole seconds), writes a flow open longer
	// than it as an interim record (record.EndActive, its counts since it
	// started), and again each time it passes, until the flow ends.
	ActiveTimeout time.Duration
	// Logger is where the pipeline reports a sink's, a source's or the
	// periodic snapshot's failure when it starts and when it ends (nil:
	// nowhere; the metrics still count it).
	Logger *slog.Logger
	// Health, when set, takes the components (internal/health) of what
	// can fail while the pipeline runs: each record sink
	// ("records:NAME"), and in a live run each source on an interface
	// ("source:I:IFACE") and the periodic snapshot ("snapshot").
	Health *health.Registry
	// Consumers build, for each shard, what sees every packet with its
	// ACSM event (consumer.go): rules and exporters attach here.
	Consumers []NewConsumer
	// HostPairs, when set, records the host pair of every new flow, and
	// each consumer learns whether the pair was new (Lookups.Novel).
	HostPairs HostPairs
	// Watchlists, when set, are the lists the consumers may ask about
	// (Lookups.Watchlists); the pipeline itself never reads them.
	Watchlists Watchlists
	// Decode, when set, is what the sources Run and RunLive read decode
	// with (capture.DecodeOptionsSetter): the tunnels' UDP ports and depth.
	// Nil leaves them capture.DefaultDecodeOptions.
	Decode *capture.DecodeOptions
	// KernelState, when set, keeps the flows in the kernel's flow state
	// (pipeline/kernelflows): a replay runs each Ethernet frame through
	// the eBPF program, and only the frames it leaves (tunnels,
	// fragments, what it does not parse) are decoded and go to the
	// shards. The idle and active timeouts, the machine and the tunnel
	// ports are taken from this Config.
	KernelState *kernelflows.Config
	// KernelTable is a live run's kernel flow state (with KernelState):
	// loaded live (kernelflows.NewLive, from KernelConfig) and attached
	// with the source of the frames it leaves to user space
	// (Table.OpenSource), which the live pipeline reads as its one
	// source. The pipeline reads its events on a goroutine of its own,
	// and closes it at Finish.
	KernelTable *kernelflows.Table
}

// DefaultConfig is what `flowmon replay` runs without flags.
func DefaultConfig() Config {
	return Config{
		Dedup:  dedup.DefaultConfig(),
		Defrag: defrag.DefaultConfig(),
		// KeepEnded: a flow's last ACK after both FINs must not start a
		// new flow (Zeek keeps a closed connection until it times out).
		// The closed tier then holds every ended flow for its timeout, so
		// that timeout is Zeek's short close delay scale (10 s), not
		// Suricata's 120 s, which would keep two minutes of ended flows.
		// dleft: one probe of two prefetched lines a packet, aging in the
		// cell, 5 bytes a flow; it measured best of the backends in speed,
		// memory and error (docs/results/acsm-dleft.md). kbf, the paper's
		// structure, stays selectable with Sidon codes, which decode in
		// closed form where the greedy codes search: same memory and error
		// (docs/results/kbf.md), a faster replay (docs/results/pipeline.md,
		// "Figures behind the code's choices").
		// ShedNew: under a flood of new flows, idle half-open state makes
		// room for new flows and established flows stay (flood_test.go).
		ACSM: acsm.Config{Backend: acsm.BackendDLeft, Capacity: 1 << 18, FPRate: 1e-3, KeepEnded: true, ShedNew: true,
			Timeouts: acsm.Timeouts{Closed: 10 * time.Second}, KBFEncoder: kbf.Sidon},
		FlowCount: flowcount.Options{ExpectedFlows: 1 << 18, FPRate: 1e-4},
		// As many open flows as the ACSM is sized for: 116 bytes each,
		// 30 MB (316 and 83 MB writing records: pipeline/flowtable/slots.go), which a
		// flood fills and no more.
		MaxFlows: 1 << 18,
		Workers:  runtime.GOMAXPROCS(0),
	}
}

// Pipeline hands packets to the shard that owns the packet's flow, which
// drops duplicates (dedup) and runs the per-flow stages. The calling
// goroutine, which holds the payload, computes only the dedup fingerprint.
// Packet, Finish and the publishing belong to one goroutine.
type Pipeline struct {
	// fpBytes is the payload bytes the dedup fingerprint reads (-1: no
	// dedup stage).
	fpBytes int
	shards  []*shard
	cur     []*batch // per shard, the batch being filled
	sent    []uint64 // per shard, batches handed over
	seq     uint64   // packets handed to the shards
	// handAt is the packet time (ns) at which the worker shards' partial
	// batches are handed over (see batchSpan).
	handAt int64
	// sinks take the flow records (nil without any); outs are the
	// shards' records, and merge, for worker shards, puts them in order
	// when seq reaches nextSync (records.go).
	sinks    *sinkSet
	outs     []*recordOut
	merge    *merger
	nextSync uint64

	pub published
	// live are the sources of a live pipeline, source i feeding shard i
	// (nil when the pipeline is fed by Packet).
	live       []capture.LiveSource
	liveStats  []capture.Stats // each source's counts, as last published (under pub.mu)
	srcStates  []sourceState   // each source's interface state (livesource.go)
	kernelMu   sync.Mutex      // serialises reading the kernel's counts (they reset on read)
	decodeOnly bool
	acsm       acsm.Config // as configured, for the summary's target and warnings

	cfg      Config                      // as built (the snapshot's params)
	newShard func(i int) (*shard, error) // builds shard i empty
	// carried is set once a snapshot holds the open flows: Finish then
	// leaves them to the next run (snapshot.go).
	carried  bool
	restored *uint64 // open flows taken over from a snapshot
	// ckpt is a live pipeline's periodic snapshot (checkpoint.go).
	ckpt *checkpoint
	// kernel keeps the flows of the frames it takes, and kout holds its
	// records (Config.KernelState; nil without).
	kernel *kernelflows.Table
	kout   *recordOut
	// kernelTable is kernel for the metrics and Status, which read it
	// from other goroutines (kernel goes nil when Finish closes it).
	kernelTable *kernelflows.Table
	// kcons are the consumers of the kernel's flows (FlowConsumer), and
	// hostPairs the store their starts' host pairs go to.
	kcons     []FlowConsumer
	kcounts   []CountConsumer
	kcounter  *flowcount.Counter // the kernel's flows' packets per window
	hostPairs HostPairs
}

// NewPipeline builds the stages from cfg.
func NewPipeline(cfg Config) (*Pipeline, error) { return newPipeline(cfg, nil) }

// newPipeline builds the stages from cfg: fed by Packet from one
// goroutine, or, with live sources, one shard per source, each fed by its
// own goroutine (live.go).
func newPipeline(cfg Config, live []capture.LiveSource) (*Pipeline, error) {
	p := &Pipeline{decodeOnly: cfg.DecodeOnly, acsm: cfg.ACSM, fpBytes: -1, live: live}
	if live != nil {
		cfg.Workers = len(live)
	}
	p.cfg = cfg
	for _, src := range live {
		if err := attachDefrag(&cfg, src); err != nil {
			return nil, err
		}
	}
	if cfg.DecodeOnly {
		return p, nil
	}
	if !cfg.NoDedup {
		dc := cfg.Dedup.WithDefaults()
		if err := dc.Validate(); err != nil {
			return nil, fmt.Errorf("build dedup stage: %w", err)
		}
		p.fpBytes = dc.PayloadBytes
	}
	workers := max(cfg.Workers, 1)
	if p.sinks = newSinkSet(cfg.Sinks, cfg.Logger, cfg.Health, cfg.CommunityIDSeed); p.sinks != nil {
		p.outs = make([]*recordOut, workers)
		for i := range p.outs {
			if workers == 1 || live != nil {
				// One shard on this goroutine, or live shards: each writes
				// its records as it ends its flows.
				p.outs[i] = newRecordOut(p.sinks)
			} else {
				p.outs[i] = newRecordOut(nil)
			}
		}
	}
	if cfg.KernelState != nil {
		if (live != nil) != (cfg.KernelTable != nil) {
			p.sinks.close()
			return nil, errors.New("build the kernel flow state: a live run attaches it with its source (Config.KernelTable), a replay loads its own")
		}
		if err := p.buildKernel(cfg, workers); err != nil {
			p.sinks.close()
			return nil, err
		}
	}
	if p.sinks != nil && workers > 1 && live == nil {
		outs := p.outs
		if p.kout != nil {
			outs = append(outs[:len(outs):len(outs)], p.kout)
		}
		p.merge = newMerger(outs)
	}
	p.cfg = cfg
	p.newShard = func(i int) (*shard, error) {
		var out *recordOut
		if p.outs != nil {
			out = p.outs[i]
			out.flows, out.seqs = out.flows[:0], out.seqs[:0]
		}
		return newShard(cfg, i, workers, out)
	}
	p.shards = make([]*shard, workers)
	if err := p.rebuild(); err != nil {
		p.sinks.close() // stops its delivery goroutine
		return nil, err
	}
	if live != nil {
		return p, nil // each feeder has its own batch (live.go)
	}
	p.nextSync = logSyncEvery
	p.handAt = math.MinInt64
	p.cur = make([]*batch, workers)
	p.sent = make([]uint64, workers)
	for i, s := range p.shards {
		if workers == 1 {
			p.cur[i] = new(batch) // runs inline (send), on this goroutine
			continue
		}
		s.start()
		p.cur[i] = <-s.free
	}
	return p, nil
}

// dedupSlots is the fingerprints of the kernel's duplicate window for
// packets a window, as dedup.New sizes its fingerprint table
// (filters/recent.New): recent.LoadPerBucket keys a bucket over the 1.25
// windows a key may be held, in whole buckets.
func dedupSlots(packets uint64) int {
	buckets := max(1, uint64(math.Ceil(float64(packets)*1.25/recent.LoadPerBucket)))
	return int(min(buckets, 1<<24)) * recent.CellsPerBucket
}

// buildKernel loads the kernel's flow state for cfg, its records going
// to the sinks as the shards' do.
func (p *Pipeline) buildKernel(cfg Config, workers int) error {
	kc := KernelConfig(cfg)
	if p.sinks != nil {
		direct := p.sinks
		if workers > 1 && cfg.KernelTable == nil {
			direct = nil // merged with the shards' (records.go)
		}
		p.kout = newRecordOut(direct)
		kc.Out = p.kout
	}
	for _, nc := range cfg.Consumers {
		c, err := nc(workers, workers+1, Lookups{Watchlists: cfg.Watchlists})
		if err != nil {
			return fmt.Errorf("build consumer of the kernel's flows: %w", err)
		}
		if fc, ok := c.(FlowConsumer); ok {
			p.kcons = append(p.kcons, fc)
		}
		if cc, ok := c.(CountConsumer); ok {
			p.kcounts = append(p.kcounts, cc)
		}
	}
	if len(p.kcons) > 0 || cfg.HostPairs != nil {
		p.hostPairs = cfg.HostPairs
		kc.Events = p.kernelEvent
	}
	if len(p.kcounts) > 0 {
		kc.Counts = p.kernelCounts
	}
	// The kernel's flows are counted per window in a counter of their
	// own, of every shard's shape, which the CCF handler merges.
	kcounter, err := flowcount.New(cfg.FlowCount)
	if err != nil {
		return fmt.Errorf("build the kernel flows' counter: %w", err)
	}
	p.kcounter, kc.Counter = kcounter, kcounter
	if cfg.KernelTable != nil {
		cfg.KernelTable.SetOutputs(kc.Out, kc.Events, kc.Counts)
		cfg.KernelTable.SetCounter(kcounter)
		p.kernel, p.kernelTable = cfg.KernelTable, cfg.KernelTable
		return nil
	}
	t, err := kernelflows.New(kc)
	if err != nil {
		return err
	}
	p.kernel, p.kernelTable = t, t
	return nil
}

// KernelConfig is the kernel flow state's configuration for cfg (with
// KernelState): its cells and rings, and cfg's machine, idle and active
// timeouts and tunnel ports. Its outputs are the pipeline's to set.
func KernelConfig(cfg Config) kernelflows.Config {
	var kc kernelflows.Config
	if cfg.KernelState != nil {
		kc = *cfg.KernelState
	}
	to := cfg.ACSM.Timeouts.WithDefaults()
	kc.Machine, kc.IdleNew, kc.IdleEstablished, kc.ActiveTimeout = cfg.ACSM.Machine, to.New, to.Established, cfg.ActiveTimeout
	kc.AttemptDelay = flowtable.AttemptDelay
	dec := capture.DefaultDecodeOptions()
	if cfg.Decode != nil {
		dec = *cfg.Decode
	}
	kc.TunnelPorts, kc.DetectTeredo, kc.DetectAYIYA = dec.UDPTunnelPorts(), dec.DetectTeredo, dec.DetectAYIYA
	if !cfg.NoDedup {
		dc := cfg.Dedup.WithDefaults()
		kc.DedupWindow, kc.DedupSlots, kc.DedupPayloadBytes = dc.Window, dedupSlots(dc.PacketsPerWindow), dc.PayloadBytes
	}
	kc.Out, kc.Events, kc.Counts = nil, nil, nil
	return kc
}

// kernelEvent hands a kernel flow's event to the consumers, a start's
// host pair to the host pair history first.
func (p *Pipeline) kernelEvent(ev *record.Event) {
	if ev.Kind == record.FlowStarted && p.hostPairs != nil {
		ev.Novel = p.hostPairs.Novel(ev.Flow.Orig, ev.Flow.Resp, time.Unix(0, ev.Flow.Start))
	}
	for _, c := range p.kcons {
		c.Flow(ev)
	}
}

// kernelCounts hands the kernel's packet counts to the consumers that
// take them.
func (p *Pipeline) kernelCounts(packets, duplicates uint64, now int64) {
	for _, c := range p.kcounts {
		c.Counts(packets, duplicates, now)
	}
}

// TakeFrame runs a replay's frame through the kernel's flow state
// (capture.FrameTaker), and reports whether it kept the frame's flow.
func (p *Pipeline) TakeFrame(f *capture.Frame) (bool, error) {
	if p.kout != nil {
		p.kout.seq = p.seq
	}
	taken, err := p.kernel.TakeFrame(f)
	p.kernelTook()
	return taken, err
}

// TakeDatagram runs a datagram reassembled from fragments the kernel's
// flow state left through it (capture.DatagramTaker), and reports
// whether it kept the datagram's flow.
func (p *Pipeline) TakeDatagram(ip []byte, ts time.Time) (bool, error) {
	if p.kout != nil {
		p.kout.seq = p.seq
	}
	taken, err := p.kernel.TakeDatagram(ip, ts)
	p.kernelTook()
	return taken, err
}

// kernelTook merges the kernel's records into the output once enough
// are waiting.
func (p *Pipeline) kernelTook() {
	if p.merge != nil && int64(len(p.kout.flows)) >= recordSyncAt {
		p.syncRecords()
	}
}

// rebuild builds every shard anew, empty.
func (p *Pipeline) rebuild() error {
	for i := range p.shards {
		s, err := p.newShard(i)
		if err != nil {
			return err
		}
		p.shards[i] = s
	}
	return nil
}

// shardHash is the hash that picks pk's shard: its flow's, or for a
// tunnelled packet its outermost carrier's address pair's, so that a
// tunnel's carrying flows and the flows inside it are all one shard's
// (shard.carriers), whichever ports each direction's carrier uses (GTP's
// uplink and downlink may differ); a tunnel's datagram that carries no
// packet (capture.Packet.CarrierOnly) goes with them. Teredo's packets go
// by their own flow: a client reaches its peers through relays of several
// addresses, so no carrier names all of a flow's packets, and its carriers
// are not counted as flows (shard.carriers).
func shardHash(pk *capture.Packet) uint64 {
	var k capture.Key
	switch {
	case pk.CarrierOnly:
		k.Src, k.Dst = pk.Key.Src, pk.Key.Dst
	case pk.Tunnels == 0 || pk.Tunnel == capture.TunnelTeredo:
		return pk.Hash
	case pk.Tunnels > 1:
		k.Src, k.Dst = pk.Carriers.Outermost.Key.Src, pk.Carriers.Outermost.Key.Dst
	default:
		k.Src, k.Dst = pk.Carriers.Outer.Key.Src, pk.Carriers.Outer.Key.Dst
	}
	return k.Hash()
}

// Packet runs one decoded packet through the stages. Here it only gets its
// dedup fingerprint, the one step that reads the payload; the packet is
// then copied into its shard's batch (without its payload, which points
// into the reader's buffer and which no per-flow stage reads; a tunnelled
// packet's carriers into the batch's own) with the fingerprint beside it. A full batch goes to the shard, which drops the
// duplicates and runs the per-flow stages on the batch with their memory
// prefetched ahead (shard.run): with one worker on this goroutine, with
// more on the shards' own.
func (p *Pipeline) Packet(pk *capture.Packet) {
	if p.decodeOnly {
		return
	}
	i := 0
	if len(p.shards) > 1 {
		i = shardOf(shardHash(pk), len(p.shards))
		if t := pk.Timestamp.UnixNano(); t >= p.handAt {
			p.handOver()
			p.handAt = t + batchSpan
		}
	}
	full := p.cur[i].add(pk, p.fingerprint(pk), p.seq)
	p.seq++
	if full {
		p.send(i)
	}
	if p.merge != nil && (p.seq == p.nextSync || full && p.outs[i].held.Load() >= recordSyncAt) {
		p.syncRecords()
	}
}

// batchSpan bounds the packet time a batch waits for the rest of its
// packets. A live feeder runs its batch once the first packet has waited
// this long, so a packet on a light link is not held back (feeder.add). A
// replay's batch goes to its worker when full, and on a sparse trace 1024
// packets of one shard can span seconds while the other shard runs
// packets seconds later. The rules' counters are shared by the shards in
// windows of packet time, so a shard that far behind would count into a
// window slot the leading shard has already recycled for a later window,
// and a count near a threshold would cross it in some runs and not
// others. So every batchSpan of packet time the replay hands the partial
// batches over too, which keeps the shards within about that of each
// other, plus the batches queued to a slower worker (on a dense trace a
// few milliseconds of packets). A dense trace fills its batches long
// before, so the hand-over costs it nothing measurable
// (docs/results/pipeline.md, "Figures behind the code's choices").
const batchSpan = int64(100 * time.Millisecond)

// handOver hands every worker shard its partial batch.
func (p *Pipeline) handOver() {
	for i := range p.shards {
		if p.cur[i].n > 0 {
			p.send(i)
		}
	}
}

// fingerprint is pk's dedup fingerprint, the one step that reads the
// payload (0 without a dedup stage).
func (p *Pipeline) fingerprint(pk *capture.Packet) uint64 {
	if p.fpBytes < 0 {
		return 0
	}
	return dedup.Fingerprint(pk, p.fpBytes)
}

// send hands shard i its batch and takes an empty one; an inline shard
// runs the batch here and keeps it.
func (p *Pipeline) send(i int) {
	s := p.shards[i]
	p.sent[i]++
	if s.in == nil {
		s.run(p.cur[i])
		return
	}
	s.in <- p.cur[i]
	p.cur[i] = <-s.free
}

// syncRecords hands the partial batches over, waits until every shard has
// processed all it was given, and hands their records, merged, to the
// sinks.
func (p *Pipeline) syncRecords() {
	p.handOver()
	for i, s := range p.shards {
		s.waitProcessed(p.sent[i])
	}
	p.merge.merge(p.sinks)
	p.nextSync = p.seq + logSyncEvery
}

// drain hands the partial batches over and waits for the workers.
func (p *Pipeline) drain() {
	if p.cur == nil {
		return
	}
	for i, s := range p.shards {
		if p.cur[i].n > 0 {
			p.send(i)
		}
		if s.in != nil {
			close(s.in)
			<-s.done
		}
	}
	p.cur = nil
}

// Register registers the pipeline's metrics on reg.
func (p *Pipeline) Register(reg prometheus.Registerer) error {
	if p.decodeOnly {
		return fmt.Errorf("register pipeline metrics: a decode-only pipeline has none")
	}
	c := &collector{pub: &p.pub, shards: p.shards}
	if p.acsm.Backend != acsm.BackendExact {
		c.target = p.acsm.FPRate
	}
	if err := reg.Register(c); err != nil {
		return fmt.Errorf("register pipeline metrics: %w", err)
	}
	if err := reg.Register(newStageCollector(p.shards)); err != nil {
		return fmt.Errorf("register stage metrics: %w", err)
	}
	if p.sinks != nil {
		if err := reg.Register(sinkCollector{p}); err != nil {
			return fmt.Errorf("register record sink metrics: %w", err)
		}
	}
	if p.kernelTable != nil {
		if err := reg.Register(kernelStateCollector{p.kernelTable}); err != nil {
			return fmt.Errorf("register kernel flow state metrics: %w", err)
		}
	}
	if p.live != nil {
		if err := reg.Register(kernelCollector{p}); err != nil {
			return fmt.Errorf("register kernel metrics: %w", err)
		}
		if err := reg.Register(snapshotCollector{p.ckpt}); err != nil {
			return fmt.Errorf("register snapshot metrics: %w", err)
		}
		if len(p.Sources()) > 0 {
			if err := reg.Register(sourceCollector{p}); err != nil {
				return fmt.Errorf("register capture source metrics: %w", err)
			}
		}
		if _, ok := p.EBPFStats(); ok {
			if err := reg.Register(ebpfCollector{p}); err != nil {
				return fmt.Errorf("register eBPF capture metrics: %w", err)
			}
		}
	}
	return nil
}

// CCFHandler serves the merge of the shards' last complete flow-count
// windows (GET /api/v1/ccf).
func (p *Pipeline) CCFHandler() http.Handler {
	cs := make([]*flowcount.Counter, len(p.shards), len(p.shards)+1)
	for i, s := range p.shards {
		cs[i] = s.counter
	}
	if p.kcounter != nil {
		cs = append(cs, p.kcounter)
	}
	return flowcount.Handler(cs...)
}

// publish copies the counters metrics read; st is the capture counts so far.
func (p *Pipeline) publish(st *capture.Stats) {
	p.pub.mu.Lock()
	p.pub.capture = *st
	p.pub.mu.Unlock()
	// Worker shards publish after each batch; the dedup stages publish
	// their counts themselves every 1024 packets.
	for _, s := range p.shards {
		if s.in == nil {
			s.publish(0)
		}
	}
}

// Finish waits for the workers, writes the records of the flows still
// open, and fills the summary's stage keys. end is the trace's last
// packet time.
func (p *Pipeline) Finish(s *Summary, end time.Time) error {
	if p.decodeOnly {
		return nil
	}
	p.drain()
	s.ConnStates = map[string]uint64{}
	s.Anomalies = map[string]uint64{}
	var err error
	var ac *ACSMSummary
	if p.merge != nil {
		// Every packet's records, in order; each shard's open flows
		// then follow, shard by shard, as the shards write them.
		p.merge.merge(p.sinks)
		for _, o := range p.merge.outs {
			o.sinks = p.sinks
		}
	}
	var counts dedupCounts
	for _, sh := range p.shards {
		if sh.dedup != nil {
			sh.dedup.Publish()
			s.DedupMemoryBytes += sh.dedup.MemoryBytes()
			s.DedupWindow = sh.dedup.Stats().Window.Structure
		}
		counts.add(sh.counts)
		if p.carried {
			sh.flows.Carry()
		} else {
			sh.flows.Finish()
		}
		if sh.out != nil {
			sh.out.flush()
		}
		for k, v := range sh.flows.States() {
			s.ConnStates[k] += v
		}
		ft := sh.flows.Stats()
		s.Flows += ft.Distinct
		s.FlowsTimedOut += ft.TimedOut
		s.FlowsAtCap += ft.AtCap
		s.FlowsShed += ft.Shed
		for _, c := range sh.consumers {
			if cerr := c.Finish(end); cerr != nil && err == nil {
				err = cerr
			}
		}
		sh.tracker.Flush(end) // ages to the trace's end and publishes its counters
		sh.counter.Flush()    // the last, partial window becomes the served one
		sh.publish(0)
		c := sh.tracker.Counts()
		for k, v := range c.Anomalies {
			s.Anomalies[k] += v
		}
		ac = ac.add(acsmSummary(sh.tracker.Stats(), c))
	}
	if kerr := p.finishKernel(s, end); kerr != nil && err == nil {
		err = kerr
	}
	if serr := p.sinks.close(); serr != nil && err == nil {
		err = serr
	}
	for _, h := range p.Sinks() {
		if s.Records == nil {
			s.Records = map[string]SinkRecords{}
		}
		s.Records[h.Name] = SinkRecords{Written: h.Written, Failed: h.Failed, Dropped: h.Dropped}
	}
	if ac != nil {
		ac.Shadow.Target = p.acsm.FPRate
		ac.Shadow.bound()
	}
	s.ACSM = ac
	s.warn(p.acsm.Capacity)
	s.Workers = len(p.shards)
	s.UniquePackets = counts.unique
	s.Duplicates = counts.duplicates
	if s.KernelState != nil {
		s.Duplicates += s.KernelState.Duplicates
	}
	s.Retransmissions = counts.retransmissions
	return err
}
