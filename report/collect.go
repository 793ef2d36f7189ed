package report

import (
	"math"
	"sync"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/record"
)

const numStates = int(acsm.NumConnStates)

// maxTunnelKinds bounds the tunnel kinds counted (capture.TunnelKind
// has 8).
const maxTunnelKinds = 16

// Collector gathers a replay's series and tops while it runs: a
// pipeline.Consumer on each shard (packets, bytes, duplicates and
// tunnelled packets, a few adds into the current bucket a packet; the
// flows kept in the kernel at their final records, shardSeries.Flow), a
// record.Sink (flows started and ended, conn_states, the tops: once a
// flow, on the pipeline's delivery goroutine) and an alerts.Sink (the
// alerts' times). Attach all three, run, then call Result. Its cost, about
// 5% of a replay's CPU, is measured in docs/results/report.md.
type Collector struct {
	mu     sync.Mutex // guards shards (built one after another) and alerts
	shards []*shardSeries
	alerts alertLog

	// The sink's, on the delivery goroutine.
	flows          series[FlowBucket]
	tops           *Tops
	tunnelledFlows uint64
}

// NewCollector returns a collector whose tops keep n rows (at least the
// report's own ReportTop).
func NewCollector(n int) *Collector {
	return &Collector{flows: newSeries(addFlow), tops: NewTops(max(n, ReportTop))}
}

// Consumer builds the collector's consumer of each shard
// (pipeline.Config.Consumers).
func (c *Collector) Consumer() pipeline.NewConsumer {
	return func(_, _ int, _ pipeline.Lookups) (pipeline.Consumer, error) {
		s := &shardSeries{s: newSeries(addPacket)}
		c.mu.Lock()
		c.shards = append(c.shards, s)
		c.mu.Unlock()
		return s, nil
	}
}

// Sink is the collector's record sink (pipeline.Config.Sinks).
func (c *Collector) Sink() record.Named { return record.Named{Name: "report", Sink: (*flowSink)(c)} }

// AlertSink is the collector's alert sink: it keeps the first MaxAlerts
// alerts and counts them all by rule.
func (c *Collector) AlertSink() alerts.Sink { return (*alertSink)(c) }

// shardSeries is one shard's consumer, and the consumer of the flows
// kept in the kernel (pipeline.FlowConsumer), which come as flow events.
type shardSeries struct {
	s       series[PacketBucket]
	tunnels [maxTunnelKinds]uint64
}

func (c *shardSeries) Packet(p *capture.Packet, _ *acsm.Event) {
	b := c.s.at(p.Timestamp.UnixNano())
	b.Packets++
	b.Bytes += uint64(p.WireLen)
	if p.Tunnels > 0 {
		b.Tunnelled++
		c.tunnels[p.Tunnel%maxTunnelKinds]++
	}
}

var _ pipeline.FlowConsumer = (*shardSeries)(nil)

// Flow adds a flow kept in the kernel to the packet series at its final
// record, spread evenly over its life: each bucket from its first packet
// to its last takes the share of the flow's packets and bytes that its
// part of that time is (the buckets' counts are rounded, their sum
// exact). So the series of such flows is their average rate, not when
// their packets came: a flow's burst is smoothed over its life, and a
// flow open at the end of a live run is not counted. Its bytes are its IP
// bytes and an Ethernet header a packet (the kernel takes Ethernet
// frames only): a frame's padding and VLAN tags are not counted. No
// packet of such a flow is tunnelled (the kernel leaves tunnels to the
// shards) or a duplicate (no dedup stage sees them). Interim records add
// nothing: the final record holds their counts.
func (c *shardSeries) Flow(ev *record.Event) {
	if ev.Kind != record.FlowEnded {
		return
	}
	f := ev.Flow
	pkts := f.OrigPkts + f.RespPkts
	c.spread(f.Start, f.End, pkts, f.OrigIPBytes+f.RespIPBytes+ethernetHeader*pkts)
}

// ethernetHeader is what an Ethernet frame adds to its IP packet.
const ethernetHeader = 14

// spread adds pkts and bytes to the buckets of [start, end], each the
// share of its part of the span.
func (c *shardSeries) spread(start, end int64, pkts, bytes uint64) {
	if end <= start {
		b := c.s.at(start)
		b.Packets += pkts
		b.Bytes += bytes
		return
	}
	c.s.at(start)
	c.s.at(end) // the grid now holds both: the buckets between need no regrid
	g := &c.s.g
	span := float64(end - start)
	var donePkts, doneBytes uint64
	for t := start; ; {
		b := c.s.at(t)
		next := g.origin + (int64(uint64(t-g.origin)>>g.shift)+1)<<g.shift
		if next > end {
			b.Packets += pkts - donePkts
			b.Bytes += bytes - doneBytes
			return
		}
		share := float64(next-start) / span
		// (min: a float64 holds counts past 2^53 rounded, maybe up.)
		p, n := min(uint64(math.Round(float64(pkts)*share)), pkts), min(uint64(math.Round(float64(bytes)*share)), bytes)
		b.Packets += p - donePkts
		b.Bytes += n - doneBytes
		donePkts, doneBytes, t = p, n, next
	}
}

func (c *shardSeries) Duplicate(p *capture.Packet) { c.s.at(p.Timestamp.UnixNano()).Duplicates++ }
func (c *shardSeries) Idle(time.Time)              {}
func (c *shardSeries) Finish(time.Time) error      { return nil }

// flowSink is the collector as a record.Sink.
type flowSink Collector

func (c *flowSink) WriteFlows(flows []record.Flow) error {
	for i := range flows {
		f := &flows[i]
		if f.EndReason == record.EndActive {
			continue // an interim record: its flow's last record counts it
		}
		c.flows.at(f.Start).Started++
		e := c.flows.at(f.End)
		e.Ended++
		e.States[int(f.State)%numStates]++
		if f.TunnelParent != 0 {
			c.tunnelledFlows++
		}
		c.tops.AddRecord(f)
	}
	return nil
}

func (c *flowSink) Flush() error { return nil }
