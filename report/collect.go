package report

import (
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
// tunnelled packets, a few adds into the current bucket a packet), a
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

// shardSeries is one shard's consumer.
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
