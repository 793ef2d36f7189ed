package pipeline

import (
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/hashmix"
	"github.com/flowmon/flowmon/internal/memhint"
	"github.com/flowmon/flowmon/pipeline/dedup"
	"github.com/flowmon/flowmon/pipeline/flowcount"
	"github.com/flowmon/flowmon/pipeline/flowtable"
)

// shard owns the per-flow stages for the flows whose hash selects it: its
// dedup (a packet's duplicates have its flow hash, so they come here too),
// ACSM, flow counter and flow table. A shard is driven by one goroutine
// (its worker, or the reader when there is one shard), so nothing in it
// takes a lock on the packet path.
type shard struct {
	dedup   *dedup.Dedup // nil with Config.NoDedup
	tracker *acsm.Tracker
	counter *flowcount.Counter
	flows   *flowtable.Table
	// consumers see every packet after the stages above (consumer.go).
	consumers []Consumer
	// dupConsumers are the consumers that also see the duplicates dedup
	// drops (DuplicateConsumer).
	dupConsumers []DuplicateConsumer
	// hostPairs records new flows' host pairs; novel is its answer for
	// the packet being processed, which consumers read (Lookups.Novel).
	hostPairs HostPairs
	novel     bool
	// ev is the ACSM's event for the packet being processed: a field, not
	// a local, since the consumers' interface calls would make a local
	// escape to the heap, one allocation a packet.
	ev acsm.Event
	// car and cev are a tunnel's carrying flow's packet and event
	// (carriers).
	car capture.Packet
	cev acsm.Event

	in   chan *batch // nil for an inline shard
	free chan *batch
	done chan struct{}
	// out holds the flow records the shard writes (nil without record
	// sinks); a worker shard of a replay tags them for the pipeline's
	// merge (records.go).
	out *recordOut

	// counts of the packets the shard admitted, dropped as duplicates and
	// marked as retransmissions (owner only; pub has the published copy).
	counts dedupCounts

	mu        sync.Mutex // guards fc, pub, ft and batches, published after each batch
	processed sync.Cond  // signalled when batches grows
	batches   uint64     // batches processed
	fc        flowcount.Stats
	pub       dedupCounts
	ft        flowTableCounts
}

// flowTableCounts are what the metrics show of a flow table as it runs
// (its cap, fixed when it is made, they read from the table).
type flowTableCounts struct{ open, atCap, shed uint64 }

func (c *flowTableCounts) add(o flowTableCounts) {
	c.open += o.open
	c.atCap += o.atCap
	c.shed += o.shed
}

// dedupCounts are a shard's packet counts; the pipeline's are their sums.
type dedupCounts struct{ unique, duplicates, retransmissions uint64 }

func (c *dedupCounts) add(o dedupCounts) {
	c.unique += o.unique
	c.duplicates += o.duplicates
	c.retransmissions += o.retransmissions
}

// batchSize packets go to a worker in one channel send, so the hand-over
// costs a few nanoseconds per packet. A batch of 1024 amortizes the
// wake-ups and goroutine switches of the hand-over, which smaller batches
// pay more often with two workers; one worker runs as fast with either
// (docs/results/pipeline.md, "Batch size").
const batchSize = 1024

// batchRing is how many batches a worker shard cycles through (its
// reader fills one while the worker runs another; the free ones wait in
// order of release). A batch's lines were last read by the worker's core
// when the reader writes them again; the reader claims them ahead of its
// copy (batch.claim), so the ring need not be big enough for them to
// leave that core's cache: a small ring keeps the batches in cache
// (docs/results/pipeline.md, "Batch ring and claim", has the sizes
// measured).
const batchRing = 8

// prefetchAhead is how many packets ahead of the one it processes a
// worker prefetches the tracker's memory for, so that the lookups' cache
// misses overlap (kbf's QueryBatch does the same within one filter).
const prefetchAhead = 4

type batch struct {
	pkts [batchSize]capture.Packet
	seq  [batchSize]uint64 // each packet's number in the pipeline (recordlog.go)
	fp   [batchSize]uint64 // each packet's dedup fingerprint (0 without dedup)
	// car holds the carriers of the batch's tunnelled packets, nc of them
	// in the order the packets came, each packet's Carriers pointing at its
	// own: the source's are overwritten by its next packet while the batch
	// waits or runs on a worker. Only tunnelled packets have carriers, so
	// they stay out of pkts, which every packet is copied into; car is made
	// the first time a tunnelled packet comes.
	car   *[batchSize]capture.Carriers
	n, nc int
	// handoff is set for a worker shard's batches, filled on the reader's
	// core and run on the worker's: see claim.
	handoff bool
}

// claimAhead is how many packets ahead of its copy the reader claims a
// handed-off batch's lines (claim).
const claimAhead = 8

// The bytes of a batch's packet and of a tunnelled packet's carriers:
// claim and addCarriers fetch the lines of 129 to 192 bytes, three or
// four by where they start, those of their first three 64-byte steps and
// of their last byte (TestClaimCoversPacket).
const (
	packetSize   = unsafe.Sizeof(capture.Packet{})
	carriersSize = unsafe.Sizeof(capture.Carriers{})
)

// add copies pk into the batch without its payload (it points into the
// source's buffer, and no per-flow stage reads it), with its carriers
// when it was tunnelled, its dedup fingerprint and its number in the
// pipeline; it reports whether the batch is full.
func (b *batch) add(pk *capture.Packet, fp, seq uint64) bool {
	if b.handoff {
		b.claim(b.n + claimAhead)
	}
	q := &b.pkts[b.n]
	*q = *pk
	q.Payload, q.Carriers = nil, nil
	if pk.Tunnels > 0 {
		b.addCarriers(q, pk.Carriers)
	}
	b.fp[b.n], b.seq[b.n] = fp, seq
	b.n++
	return b.n == batchSize
}

// addCarriers copies c into the batch's carriers as q's, claiming a
// handed-off batch's carriers ahead as claim does its packets.
func (b *batch) addCarriers(q *capture.Packet, c *capture.Carriers) {
	if b.car == nil {
		b.car = new([batchSize]capture.Carriers)
	}
	if b.handoff && b.nc+claimAhead < batchSize {
		a := unsafe.Pointer(&b.car[b.nc+claimAhead])
		memhint.PrefetchW2(a, unsafe.Add(a, 64))
		memhint.PrefetchW2(unsafe.Add(a, 128), unsafe.Add(a, carriersSize-1))
	}
	d := &b.car[b.nc]
	*d = *c
	q.Carriers = d
	b.nc++
}

// empty drops the batch's packets.
func (b *batch) empty() { b.n, b.nc = 0, 0 }

// claim fetches slot j's lines for writing. A handed-off batch's lines
// were last read on the worker's core: each store of the copy into them
// waits for its line to be taken back from that core, the store buffer
// fills, and the reader stalls in the first store of the next packet's
// read. Claimed a few packets ahead, the lines are taken while the reader
// reads and decodes; how much that saves depends on how the shared
// machine's cores stand (docs/results/pipeline.md, "Batch ring and
// claim"). One worker's batches stay on one core and are not claimed.
func (b *batch) claim(j int) {
	if j >= batchSize {
		return
	}
	// The packet's lines (packetSize); fp and seq hold eight slots a
	// line; a tunnelled packet's carriers are claimed as they are copied
	// (addCarriers).
	a := unsafe.Pointer(&b.pkts[j])
	memhint.PrefetchW2(a, unsafe.Add(a, 64))
	memhint.PrefetchW2(unsafe.Add(a, 128), unsafe.Add(a, packetSize-1))
	memhint.PrefetchW2(unsafe.Pointer(&b.fp[j]), unsafe.Pointer(&b.fp[j]))
	if j%8 == 0 {
		memhint.PrefetchW2(unsafe.Pointer(&b.seq[j]), unsafe.Pointer(&b.seq[j]))
	}
}

func newShard(cfg Config, index, workers int, out *recordOut) (*shard, error) {
	ac := cfg.ACSM
	ac.Capacity = max(1, (ac.Capacity+workers-1)/workers)
	fo := cfg.FlowCount
	// Every shard's filter has the full shape: peers compare one window
	// filter with another, and the handler merges the shards' filters,
	// which needs equal shapes. The shards hold disjoint flows, so the
	// merge has the load of one.
	s := &shard{hostPairs: cfg.HostPairs}
	s.processed.L = &s.mu
	s.out = out
	var err error
	if !cfg.NoDedup {
		// Sized for this shard's share of the packet rate.
		if s.dedup, err = dedup.New(cfg.Dedup.Share(workers)); err != nil {
			return nil, fmt.Errorf("build dedup stage: %w", err)
		}
	}
	if s.tracker, err = acsm.New(ac); err != nil {
		return nil, fmt.Errorf("build acsm stage: %w", err)
	}
	if s.counter, err = flowcount.New(fo); err != nil {
		return nil, fmt.Errorf("build flow counter: %w", err)
	}
	s.flows = flowtable.New(flowTableConfig(cfg, workers, s, out))
	lk := Lookups{Watchlists: cfg.Watchlists}
	if s.hostPairs != nil {
		lk.Novel = func() bool { return s.novel }
	}
	for _, nc := range cfg.Consumers {
		c, err := nc(index, consumerShards(cfg, workers), lk)
		if err != nil {
			return nil, fmt.Errorf("build consumer of shard %d: %w", index, err)
		}
		s.consumers = append(s.consumers, c)
		if d, ok := c.(DuplicateConsumer); ok {
			s.dupConsumers = append(s.dupConsumers, d)
		}
	}
	return s, nil
}

// consumerShards is how many of each consumer the pipeline builds: one a
// shard, and one for the flows kept in the kernel (FlowConsumer).
func consumerShards(cfg Config, workers int) int {
	if cfg.KernelState != nil {
		return workers + 1
	}
	return workers
}

// flowTableConfig is the flow table of shard s, one of workers, writing
// its records to out (nil: none).
func flowTableConfig(cfg Config, workers int, s *shard, out *recordOut) flowtable.Config {
	to := cfg.ACSM.Timeouts.WithDefaults()
	fc := flowtable.Config{MaxFlows: max(1, cfg.MaxFlows/workers), IdleNew: to.New, IdleEstablished: to.Established,
		Counter: s.counter, Tracker: s.tracker, ActiveTimeout: cfg.ActiveTimeout}
	if out != nil {
		fc.Out = out // not a typed nil in the interface
	}
	return fc
}

// admit runs p, whose dedup fingerprint is fp, through the shard's dedup
// and counts it; it reports false for a duplicate to drop.
func (s *shard) admit(p *capture.Packet, fp uint64) bool {
	if s.dedup != nil {
		switch s.dedup.CheckPrint(p, fp) {
		case dedup.Duplicate:
			s.counts.duplicates++
			for _, c := range s.dupConsumers {
				c.Duplicate(p)
			}
			return false
		case dedup.Retransmission:
			s.counts.retransmissions++
		}
	}
	s.counts.unique++
	return true
}

// packet runs an admitted packet through the per-flow stages.
func (s *shard) packet(p *capture.Packet) {
	s.flows.SetParent(0)
	if p.Tunnels > 0 {
		s.carriers(p)
	}
	ev := &s.ev
	// Flows whose linger is over leave the ACSM before it sees the
	// packet, as Zeek's timers run before it: the packet of a removed
	// connection starts a new one.
	s.flows.FlushEnded(p.Timestamp.UnixNano())
	s.tracker.ObserveInto(p, ev)
	s.rotate(p.Timestamp)
	s.flows.Packet(p, ev) // counts the packet in its flow's slot
	if ev.New && s.hostPairs != nil {
		o := ev.Originator()
		s.novel = s.hostPairs.Novel(o.Src, o.Dst, p.Timestamp)
	}
	for _, c := range s.consumers {
		c.Packet(p, ev)
	}
}

// carriers counts the UDP flows that carried p, each in a flow of its
// own, as Zeek logs a UDP tunnel's carrier as a connection (GRE and IP in
// IP carriers are in Zeek's tunnel.log only, not connections), the
// outermost first, and sets the tunnel parent of the flow p starts: the
// innermost carrier's uid, or for GRE and IP in IP (and Teredo, whose
// relays' carriers are not counted: shardHash) a tunnel uid per outer
// address pair and protocol (tunnelUID). A carrier inside another tunnel has
// that one as its own parent. The carriers are counted and aged as flows
// (the ACSM, the flow table, the flow counter), not shown to the
// consumers, which see the packet they carried.
func (s *shard) carriers(p *capture.Packet) {
	cs := p.Carriers
	if p.Tunnel == capture.TunnelTeredo {
		// Not counted: its packets are sharded by their own flow
		// (shardHash), so a relay's carrier would be split.
		s.flows.SetParent(tunnelUID(cs.Outer.Hash))
		return
	}
	if p.Tunnels > 1 {
		if cs.Outermost.Key.Proto == capture.ProtoUDP {
			s.flows.SetParent(s.carrier(p, &cs.Outermost))
		} else {
			s.flows.SetParent(tunnelUID(cs.Outermost.Hash))
		}
	}
	if cs.Outer.Key.Proto == capture.ProtoUDP {
		s.flows.SetParent(s.carrier(p, &cs.Outer))
	} else {
		s.flows.SetParent(tunnelUID(cs.Outer.Hash))
	}
}

// carrier counts p as a packet of the UDP flow that carried it, cr, and
// returns that flow's uid seed.
func (s *shard) carrier(p *capture.Packet, cr *capture.Carrier) uint64 {
	c := &s.car
	k, n := &cr.Key, cr.Len
	c.Timestamp, c.Key, c.Hash, c.Reversed = p.Timestamp, *k, cr.Hash, cr.Reversed
	c.LinkType, c.VLANs, c.WireLen, c.CapLen = p.LinkType, p.VLANs, p.WireLen, p.CapLen
	c.EtherType = 0x86DD
	ipHeader := uint32(40)
	if k.Src.Is4() {
		c.EtherType, ipHeader = 0x0800, 20
	}
	c.PayloadLen, c.IPLen = n, uint16(min(n+8+ipHeader, 0xffff))
	c.HasTCP, c.Flags, c.Fragment, c.Tunnels = false, 0, capture.NotFragment, 0
	s.flows.FlushEnded(c.Timestamp.UnixNano())
	s.tracker.ObserveInto(c, &s.cev)
	s.flows.Packet(c, &s.cev)
	return s.flows.LastUID()
}

// tunnelUID is the uid seed of a GRE or IP in IP tunnel, which is no
// connection: one per outer address pair and protocol (the carrier's
// flow hash, whose ports are 0), as Zeek's tunnel uids are per address
// pair and tunnel type.
func tunnelUID(carrierHash uint64) uint64 { return hashmix.Mix(carrierHash ^ 0x7475_6e6e_656c) }

// rotate ends the flow counter's window when now is past it: the flows'
// packets in it go to the counter first (the flow table holds them,
// in their slots).
func (s *shard) rotate(now time.Time) {
	if s.counter.Due(now) {
		s.flows.FlushCounts()
		s.counter.Rotate(now)
	}
}

// idle moves the shard's clock to now when no packet came for a while
// (a live source's idle poll; the kernel stamps packets with the same
// wall clock): what a packet at now would have set off happens, so a
// quiet link still gets its flow records written, its idle flows timed
// out and its flow-count windows ended.
func (s *shard) idle(now time.Time) {
	s.rotate(now)
	s.flows.Advance(now.UnixNano())
	for _, c := range s.consumers {
		c.Idle(now)
	}
}

// start runs the shard on its own goroutine, fed through in.
func (s *shard) start() {
	s.in = make(chan *batch, 4)
	s.free = make(chan *batch, batchRing)
	for range cap(s.free) {
		s.free <- &batch{handoff: true}
	}
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		for b := range s.in {
			s.run(b)
			if s.out != nil {
				s.out.held.Store(int64(len(s.out.flows)))
			}
			s.publish(1)
			s.free <- b
		}
	}()
}

// run processes a batch and empties it. The stages' memory for a packet is
// requested before the packet is processed, so that the cache misses of
// several flows are in flight at once instead of one after the other: the
// flow table's metas 2*prefetchAhead packets ahead, then, prefetchAhead
// packets ahead, what the metas point to (the flow's slot) and the other
// stages' lines.
func (s *shard) run(b *batch) {
	for i := range min(b.n, 2*prefetchAhead) {
		s.flows.PrefetchHome(b.pkts[i].Hash)
	}
	for i := range min(b.n, prefetchAhead) {
		s.prefetch(&b.pkts[i], b.fp[i])
	}
	for i := range b.n {
		if j := i + 2*prefetchAhead; j < b.n {
			s.flows.PrefetchHome(b.pkts[j].Hash)
		}
		if j := i + prefetchAhead; j < b.n {
			s.prefetch(&b.pkts[j], b.fp[j])
		}
		if !s.admit(&b.pkts[i], b.fp[i]) {
			continue
		}
		if s.out != nil {
			s.out.seq = b.seq[i]
		}
		s.packet(&b.pkts[i])
	}
	b.empty()
}

// prefetch starts loading what the stages will read for p, whose dedup
// fingerprint is fp.
func (s *shard) prefetch(p *capture.Packet, fp uint64) {
	if s.dedup != nil {
		s.dedup.Prefetch(fp)
	}
	s.tracker.Prefetch(p.Hash)
	s.flows.PrefetchFlow(p.Hash, flowtable.OpensHandshake(p))
}

// publish copies the counters the metrics read, and counts done more
// processed batches for waitProcessed (a worker publishes after each).
func (s *shard) publish(done uint64) {
	st := s.counter.Stats()
	s.mu.Lock()
	s.fc = st
	s.pub = s.counts
	ft := s.flows.Stats()
	s.ft = flowTableCounts{open: ft.Open, atCap: ft.AtCap, shed: ft.Shed}
	s.batches += done
	if done > 0 {
		s.processed.Signal()
	}
	s.mu.Unlock()
}

// waitProcessed returns once the shard has processed n batches.
func (s *shard) waitProcessed(n uint64) {
	s.mu.Lock()
	for s.batches < n {
		s.processed.Wait()
	}
	s.mu.Unlock()
}

// publishedCounts returns the counts as of the shard's last publish.
func (s *shard) publishedCounts() dedupCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pub
}

func (s *shard) flowTableCounts() flowTableCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ft
}

func (s *shard) flowcountStats() flowcount.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fc
}

// shardOf picks a shard from the flow hash's top bits; the structures
// index with the low bits (remixed), so the shards stay evenly loaded.
func shardOf(h uint64, n int) int {
	return int((h >> 32) * uint64(n) >> 32)
}
