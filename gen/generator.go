package gen

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Packet is one packet of the trace, as a capture would record it.
type Packet struct {
	// Timestamp is the capture time (µs resolution).
	Timestamp time.Time
	// Data holds the captured bytes (at most Options.Snaplen of them); it
	// points into the generator and is valid until the next call to Next.
	Data []byte
	// Length is the packet's length on the wire.
	Length int
	// Duplicate marks a SPAN duplicate copy.
	Duplicate bool

	us int64 // Timestamp in µs since the Unix epoch
}

// Stats sums up what a generator wrote.
type Stats struct {
	Flows         int64                // flows finished
	Packets       int64                // packets, not counting SPAN duplicates
	Duplicates    int64                // SPAN duplicate copies
	WireBytes     int64                // sum of wire lengths, duplicates included
	CapturedBytes int64                // sum of captured lengths
	ConnStates    [NumConnStates]int64 // flows per true conn_state
	Scenarios     [numScenarios]int64  // flows per scenario
	PlannedFlows  int                  // flows the trace was planned with
	First, Last   time.Time            // first and last packet times
}

// String prints a one-line summary.
func (s Stats) String() string {
	return fmt.Sprintf("%d packets (+%d duplicates), %d flows, %d wire bytes, %d captured bytes, %.3f s of traffic",
		s.Packets, s.Duplicates, s.Flows, s.WireBytes, s.CapturedBytes, s.Last.Sub(s.First).Seconds())
}

// Generator produces a trace packet by packet. Flows are interleaved with
// a heap keyed by each active flow's next packet time, so memory grows
// with the number of concurrent flows, not with the trace.
//
// A Generator is not safe for concurrent use.
type Generator struct {
	opt     Options
	startUS int64
	snaplen int
	ttlDup  uint8

	heap    []*flow
	free    []*flow
	sources []*source
	nextID  uint64

	dupPCG rand.PCG
	dupRNG *rand.Rand

	counts  [numScenarios]int
	idBase  [numScenarios]int // first client id of each scenario's range
	addrKey uint32

	onFlow func(*Truth)
	truth  Truth
	stats  Stats
	buf    [bufSize]byte
}

// bufSize holds the largest packet rendered: Ethernet + IPv6 + TCP with
// options + one MSS of payload.
const bufSize = 2048

// New returns a generator for opt (zero fields read as documented on
// Options). With opt.Packets set it first plans, without writing
// anything, how many flows reach that many packets.
func New(opt Options) (*Generator, error) {
	opt = opt.withDefaults()
	if err := opt.Validate(); err != nil {
		return nil, fmt.Errorf("new generator: %w", err)
	}
	g := &Generator{opt: opt, startUS: opt.Start.UnixMicro(), snaplen: opt.Snaplen}
	if opt.DupTTLChange {
		g.ttlDup = 1
	}
	g.dupPCG.Seed(splitmix64(opt.Seed^0x647570), splitmix64(opt.Seed+0x7370616e))
	g.dupRNG = rand.New(&g.dupPCG)
	g.addrKey = uint32(splitmix64(opt.Seed^0x61646472)) & mask24
	flows := opt.Flows
	if opt.Packets > 0 {
		var err error
		if flows, err = flowsForPackets(&g.opt, opt.Packets); err != nil {
			return nil, fmt.Errorf("new generator: %w", err)
		}
	}
	g.counts = flowCounts(flows, opt.Mix)
	g.stats.PlannedFlows = flows
	g.setupSources()
	return g, nil
}

// Flows returns the number of flows the trace is planned with.
func (g *Generator) Flows() int { return g.stats.PlannedFlows }

// SetTruthFunc makes the generator call fn with each flow's ground truth
// when the flow's last packet has been produced. The *Truth is reused:
// copy it to keep it.
func (g *Generator) SetTruthFunc(fn func(*Truth)) { g.onFlow = fn }

// Stats returns what has been produced so far.
func (g *Generator) Stats() Stats { return g.stats }

// Next fills p with the next packet in time order and reports whether
// there was one. It does not allocate once the pool of flows has grown to
// the trace's concurrency.
func (g *Generator) Next(p *Packet) bool {
	if len(g.heap) == 0 {
		return false
	}
	f := g.heap[0]
	now := f.t
	var n int
	if f.dupPending {
		f.dupPending = false
		n = g.render(f, &f.prev, g.ttlDup)
		f.dupPkts++
		f.last = now
		g.stats.Duplicates++
		p.Duplicate = true
		if f.done {
			g.finish(f)
		} else {
			f.t = f.pendingAt
			g.siftDown(0)
		}
	} else {
		first, src := !f.started, f.src
		f.started = true
		q := f.pending
		if q.resp {
			q.ipid = f.sIPID
			f.sIPID++
			f.respPkts++
		} else {
			q.ipid = f.cIPID
			f.cIPID++
			f.origPkts++
		}
		n = g.render(f, &q, 0)
		f.prev, f.last = q, now
		g.stats.Packets++
		p.Duplicate = false
		kind, more := f.produce(&f.pending)
		gap := int64(0)
		if more {
			gap = f.gapFor(kind, q.resp, f.pending.resp)
			f.pendingAt = now + gap
		} else {
			f.done = true
		}
		if g.opt.DupRate > 0 && g.dupRNG.Float64() < g.opt.DupRate {
			maxDelay := int64(50)
			if more {
				maxDelay = min(maxDelay, gap-1)
			}
			f.dupPending = true
			f.t = now + 1 + g.dupRNG.Int64N(maxDelay)
			g.siftDown(0)
		} else if f.done {
			g.finish(f)
		} else {
			f.t = f.pendingAt
			g.siftDown(0)
		}
		if first {
			g.activate(src)
		}
	}
	capLen := n
	if g.snaplen > 0 && capLen > g.snaplen {
		capLen = g.snaplen
	}
	g.stats.WireBytes += int64(n)
	g.stats.CapturedBytes += int64(capLen)
	p.us = g.startUS + now
	p.Timestamp = time.UnixMicro(p.us).UTC()
	p.Data = g.buf[:capLen]
	p.Length = n
	if g.stats.Packets+g.stats.Duplicates == 1 {
		g.stats.First = p.Timestamp
	}
	g.stats.Last = p.Timestamp
	return true
}

// activate starts src's next flow, if it has one.
func (g *Generator) activate(src *source) {
	start, idx, ok := src.next()
	if !ok {
		return
	}
	var f *flow
	if n := len(g.free); n > 0 {
		f, g.free = g.free[n-1], g.free[:n-1]
	} else {
		f = newFlow()
	}
	f.plan(&g.opt, src.scen, idx)
	f.src = src
	g.endpoints(f)
	f.id = g.nextID
	g.nextID++
	f.produce(&f.pending) // every flow has at least one packet
	f.t, f.first, f.pendingAt = start, start, start
	g.push(f)
}

// finish reports the flow at the heap's top, removes it and pools it.
func (g *Generator) finish(f *flow) {
	g.stats.Flows++
	g.stats.ConnStates[f.state]++
	g.stats.Scenarios[f.scen]++
	if g.onFlow != nil {
		f.fillTruth(&g.truth, g.startUS)
		g.onFlow(&g.truth)
	}
	last := len(g.heap) - 1
	g.heap[0] = g.heap[last]
	g.heap[last] = nil
	g.heap = g.heap[:last]
	if last > 0 {
		g.siftDown(0)
	}
	f.src = nil
	g.free = append(g.free, f)
}

// less orders flows by next event time, then by creation.
func less(a, b *flow) bool { return a.t < b.t || (a.t == b.t && a.id < b.id) }

func (g *Generator) push(f *flow) {
	g.heap = append(g.heap, f)
	h := g.heap
	i := len(h) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !less(h[i], h[parent]) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (g *Generator) siftDown(i int) {
	h := g.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && less(h[r], h[l]) {
			m = r
		}
		if !less(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
