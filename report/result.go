package report

import (
	"maps"
	"slices"

	"github.com/flowmon/flowmon/capture"
)

// Result is what a Collector gathered, its series on one grid.
type Result struct {
	Series Series
	Tops   *Tops
}

// Series are a replay's figures over packet time: bucket i of each
// holds [Start + i*Width, Start + (i+1)*Width) nanoseconds.
type Series struct {
	Start   int64          `json:"start_ns"`
	Width   int64          `json:"width_ns"`
	Packets []PacketBucket `json:"packets"`
	Flows   []FlowBucket   `json:"flows"`
	// Tunnels are the packets past dedup that came out of a tunnel, by
	// the innermost tunnel's kind, and TunnelledFlows the flow records
	// with a tunnel parent.
	Tunnels        map[string]uint64 `json:"tunnelled_packets"`
	TunnelledFlows uint64            `json:"tunnelled_flows"`
	// Alerts are the first MaxAlerts alerts fired, AlertsByRule every
	// alert fired by rule (the summary's alerts).
	Alerts       []Alert           `json:"alerts"`
	AlertsByRule map[string]uint64 `json:"alerts_by_rule"`
}

// Result merges the shards' series and the records' onto one grid. Call
// it once the replay is over.
func (c *Collector) Result() *Result {
	var pk series[PacketBucket]
	if len(c.shards) > 0 {
		pk = newSeries(addPacket)
	}
	var tunnels [maxTunnelKinds]uint64
	for _, s := range c.shards {
		pk.merge(&s.s)
		for i, n := range s.tunnels {
			tunnels[i] += n
		}
	}
	fl := &c.flows
	// One grid for both: the one covering both at the coarser width.
	if pk.g.used > 0 && fl.g.used > 0 {
		to := cover(min(pk.g.origin, fl.g.origin), max(pk.g.end(), fl.g.end())-1, max(pk.g.shift, fl.g.shift))
		pk.coarsen(to)
		fl.coarsen(to)
	} else if fl.g.used > 0 {
		pk = newSeries(addPacket)
		pk.coarsen(fl.g)
	} else if pk.g.used > 0 {
		fl.coarsen(pk.g)
	}
	g := fl.g
	if pk.b != nil {
		g = pk.g
	}
	r := &Result{Tops: c.tops, Series: Series{Start: g.origin, Width: int64(1) << g.shift,
		Flows: slices.Clone(fl.buckets()), TunnelledFlows: c.tunnelledFlows, Tunnels: map[string]uint64{}}}
	if pk.b != nil {
		r.Series.Packets = slices.Clone(pk.buckets())
	}
	for i, n := range tunnels {
		if n > 0 {
			r.Series.Tunnels[capture.TunnelKind(i).String()] = n
		}
	}
	c.mu.Lock()
	r.Series.Alerts = slices.Clone(c.alerts.kept)
	r.Series.AlertsByRule = maps.Clone(c.alerts.byRule)
	c.mu.Unlock()
	if r.Series.AlertsByRule == nil {
		r.Series.AlertsByRule = map[string]uint64{}
	}
	if r.Series.Alerts == nil {
		r.Series.Alerts = []Alert{}
	}
	return r
}
