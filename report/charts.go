package report

import (
	"cmp"
	"fmt"
	"html/template"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/pipeline"
)

// timeCharts are the charts over packet time, rates per second of the
// buckets' counts (a bucket's width changes with the trace's length).
func timeCharts(s *pipeline.Summary, full *Series) []chart {
	se := full.drawn()
	dx := float64(se.Width) / 1e9
	x0 := 0.0
	if !s.TraceStart.IsZero() {
		x0 = float64(se.Start-s.TraceStart.UnixNano()) / 1e9
	}
	per := func(n uint64) float64 { return float64(n) / dx }
	var pkts, dups, bits, tun []float64
	for _, b := range se.Packets {
		pkts = append(pkts, per(b.Packets))
		dups = append(dups, per(b.Duplicates))
		bits = append(bits, per(b.Bytes*8))
		tun = append(tun, per(b.Tunnelled))
	}
	var active, started []float64
	var open float64
	for _, b := range se.Flows {
		open += float64(b.Started)
		active = append(active, open)
		open -= float64(b.Ended)
		started = append(started, per(b.Started))
	}
	width := fmt.Sprintf("buckets of %s s", si(dx))
	packetLines := []line{{"packets/s (past dedup)", palette[0], pkts}, {"duplicates/s (dropped)", palette[2], dups}}
	if slices.ContainsFunc(tun, func(v float64) bool { return v > 0 }) {
		packetLines = append(packetLines, line{"tunnelled packets/s", palette[4], tun})
	}
	charts := []chart{
		{ID: "packets", Title: "Packets over time", Note: width, SVG: timeChart("packets", "packets/s", x0, dx, packetLines, false)},
		{ID: "bytes", Title: "Bits over time", Note: "wire bytes of the packets past dedup",
			SVG: timeChart("bytes", "bits/s", x0, dx, []line{{"bits/s", palette[1], bits}}, false)},
		{ID: "flows", Title: "Flows open", Note: "flows whose first packet is at or before the bucket and whose last is in or after it (flow records)",
			SVG: timeChart("flows", "flows", x0, dx, []line{{"open flows", palette[3], active}}, false)},
		{ID: "newflows", Title: "New flows per second", Note: "flow records by their first packet",
			SVG: timeChart("newflows", "flows/s", x0, dx, []line{{"new flows/s", palette[4], started}}, false)},
		statesChart(full, x0),
		{ID: "alerts", Title: "Alerts", Note: alertsNote(s, se), SVG: alertsChart(s, se, x0, dx)},
	}
	return charts
}

// drawnBuckets is the most buckets a chart draws: about one per two
// pixels of its width. The page's JSON keeps the series whole.
const drawnBuckets = 256

// drawn returns the series with adjacent buckets added until there are
// at most drawnBuckets.
func (se *Series) drawn() *Series {
	k := 1
	for (max(len(se.Packets), len(se.Flows))+k-1)/k > drawnBuckets {
		k *= 2
	}
	d := *se
	d.Width *= int64(k)
	d.Packets = group(se.Packets, k, addPacket)
	d.Flows = group(se.Flows, k, addFlow)
	return &d
}

func group[B any](b []B, k int, add func(dst, src *B)) []B {
	if k == 1 {
		return b
	}
	out := make([]B, (len(b)+k-1)/k)
	for i := range b {
		add(&out[i/k], &b[i])
	}
	return out
}

// stateColors colour the conn_states by what they say: green a whole
// connection, blues one established, oranges and reds attempts and
// resets, greys the rest.
var stateColors = [numStates]string{
	acsm.ConnUnknown: "#bab0ac", acsm.S0: "#f28e2b", acsm.S1: "#4e79a7", acsm.SF: "#59a14f", acsm.REJ: "#e15759",
	acsm.S2: "#76b7b2", acsm.S3: "#a0cbe8", acsm.RSTO: "#b07aa1", acsm.RSTR: "#ff9da7", acsm.RSTOS0: "#9c755f",
	acsm.RSTRH: "#d4a6c8", acsm.SH: "#edc948", acsm.SHR: "#f1ce63", acsm.OTH: "#79706e",
}

// mixBuckets is the most columns the conn_state mix draws: a share
// needs several flows a column to mean anything.
const mixBuckets = 48

// statesChart is the share of each conn_state among the flows that ended
// in each bucket, a stacked column a bucket.
func statesChart(full *Series, x0full float64) chart {
	k := 1
	for (len(full.Flows)+k-1)/k > mixBuckets {
		k *= 2
	}
	flows := group(full.Flows, k, addFlow)
	dx := float64(full.Width) * float64(k) / 1e9
	var used []int
	for st := range numStates {
		if slices.ContainsFunc(flows, func(b FlowBucket) bool { return b.States[st] > 0 }) {
			used = append(used, st)
		}
	}
	note := "share of the flows ending in each column, by final conn_state (flow records)"
	var b strings.Builder
	svgOpen(&b, "states")
	if len(used) == 0 {
		noData(&b)
		return chart{ID: "states", Title: "conn_state mix over time", Note: note, SVG: template.HTML(b.String())}
	}
	n := len(flows)
	xmin, xmax := x0full, x0full+float64(n)*dx
	X := func(x float64) float64 { return padL + (x-xmin)/(xmax-xmin)*(chartW-padL-padR) }
	Y := func(y float64) float64 { return chartH - padB - y/100*(chartH-padT-padB) }
	axes(&b, xmin, xmax, 100, 25, "% of the flows ended", X, Y)
	lines := make([]line, len(used))
	for i, st := range used {
		lines[i] = line{name: acsm.ConnState(st).String(), color: stateColors[st%len(stateColors)]}
	}
	for j, fb := range flows {
		var total uint64
		for _, st := range used {
			total += fb.States[st]
		}
		if total == 0 {
			continue
		}
		x, w := X(x0full+float64(j)*dx), X(x0full+float64(j+1)*dx)-X(x0full+float64(j)*dx)
		acc := 0.0
		for i, st := range used {
			if fb.States[st] == 0 {
				continue
			}
			share := 100 * float64(fb.States[st]) / float64(total)
			fmt.Fprintf(&b, `<rect class="series" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %d of %d (%.1f%%)</title></rect>`,
				x+0.5, Y(acc+share), math.Max(w-1, 0.5), Y(acc)-Y(acc+share), lines[i].color, lines[i].name, fb.States[st], total, share)
			acc += share
		}
	}
	b.WriteString("</svg>")
	legend(&b, lines)
	return chart{ID: "states", Title: "conn_state mix over time", Note: note, SVG: template.HTML(b.String())}
}

func alertsNote(s *pipeline.Summary, se *Series) string {
	var n uint64
	for _, v := range se.AlertsByRule {
		n += v
	}
	note := fmt.Sprintf("%d alerts fired; each a bar from when it fired to when it resolved", n)
	if int(n) > len(se.Alerts) {
		note += fmt.Sprintf(" (the first %d drawn)", len(se.Alerts))
	}
	if s.AlertsSuppressed > 0 {
		note += fmt.Sprintf("; %d repeats folded", s.AlertsSuppressed)
	}
	return note
}

// alertsChart draws a lane per rule that fired, an alert a bar.
func alertsChart(s *pipeline.Summary, se *Series, x0, dx float64) template.HTML {
	rules := slices.Sorted(maps.Keys(se.AlertsByRule))
	rules = slices.DeleteFunc(rules, func(r string) bool { return se.AlertsByRule[r] == 0 })
	var b strings.Builder
	h := max(chartH, padT+padB+24*len(rules))
	fmt.Fprintf(&b, `<svg class="chart" data-chart="alerts" viewBox="0 0 %d %d" width="%d" height="%d" role="img">`, chartW, h, chartW, h)
	n := max(len(se.Packets), len(se.Flows))
	if len(rules) == 0 || n == 0 {
		fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#f6f6f6"/>`, chartW, h)
		fmt.Fprintf(&b, `<text class="nodata" x="%d" y="%d" text-anchor="middle">no alert fired</text></svg>`, chartW/2, h/2)
		return template.HTML(b.String())
	}
	const labelW = 130
	xmin, xmax := x0, x0+float64(n)*dx
	X := func(x float64) float64 { return labelW + (x-xmin)/(xmax-xmin)*(chartW-labelW-padR) }
	start := s.TraceStart.UnixNano()
	lane := map[string]int{}
	for i, r := range rules {
		lane[r] = i
		y := padT + 24*i
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%d" y2="%d"/>`, labelW, chartW-padR, y+20, y+20)
		fmt.Fprintf(&b, `<text class="lbl" x="%d" y="%d" text-anchor="end">%s (%d)</text>`, labelW-6, y+14, esc(clip(r, 16)), se.AlertsByRule[r])
	}
	sev := map[string]string{"critical": palette[2], "warning": palette[1], "info": palette[0]}
	for _, a := range se.Alerts {
		i, ok := lane[a.Rule]
		if !ok {
			continue
		}
		t0 := float64(a.Start.UnixNano()-start) / 1e9
		t1 := xmax
		if !a.End.IsZero() {
			t1 = float64(a.End.UnixNano()-start) / 1e9
		}
		w := math.Max(X(t1)-X(t0), 3)
		color := cmp.Or(sev[a.Severity], palette[6])
		fmt.Fprintf(&b, `<rect class="alert" x="%.1f" y="%d" width="%.1f" height="16" fill="%s" fill-opacity="0.75"><title>%s %s at %.3f s (%d, value %s)</title></rect>`,
			X(t0), padT+24*i+2, w, color, esc(a.Rule), esc(a.Key), t0, a.Count, si(a.Value))
	}
	_, xstep := niceMax((xmax - xmin) / 1.2)
	y := padT + 24*len(rules)
	for x := math.Ceil(xmin/xstep) * xstep; x <= xmax; x += xstep {
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>`, X(x), y+14, esc(si(x)))
	}
	fmt.Fprintf(&b, `<text class="unit" x="%d" y="%d">s from the trace's start</text></svg>`, labelW, y+30)
	return template.HTML(b.String())
}

// barCharts are the charts of totals: the talkers, the ports, the
// packets left out by reason, the tunnels and the ACSM.
func barCharts(s *pipeline.Summary, se *Series, tt *TopTables) []chart {
	keyBars := func(kt KeyTable) []bar {
		var bars []bar
		for _, r := range kt.Rows {
			bars = append(bars, bar{label: r.Key, value: float64(r.Bytes), note: fmt.Sprintf("B, %s pkts", si(float64(r.Packets)))})
		}
		return bars
	}
	var lost []bar
	add := func(label string, n uint64, color string) {
		if n > 0 {
			lost = append(lost, bar{label: label, value: float64(n), color: color})
		}
	}
	add("duplicates (dropped)", s.Duplicates, palette[2])
	add("retransmissions (marked)", s.Retransmissions, palette[1])
	for _, k := range slices.Sorted(maps.Keys(s.DecodeErrors)) {
		add("decode error: "+k, s.DecodeErrors[k], palette[6])
	}
	for _, k := range slices.Sorted(maps.Keys(s.Skipped)) {
		add("skipped: "+k, s.Skipped[k], palette[9])
	}
	if d := s.Defrag; d != nil {
		for _, k := range slices.Sorted(maps.Keys(d.Dropped)) {
			add("fragments lost: "+k, d.Dropped[k], palette[8])
		}
	}
	var tunnels []bar
	for _, k := range slices.Sorted(maps.Keys(se.Tunnels)) {
		tunnels = append(tunnels, bar{label: k + " packets", value: float64(se.Tunnels[k]), color: palette[4]})
	}
	if se.TunnelledFlows > 0 {
		tunnels = append(tunnels, bar{label: "flows in tunnels", value: float64(se.TunnelledFlows), color: palette[3]})
	}
	charts := []chart{
		{ID: "src", Title: "Top originators by bytes", Note: "id.orig_h, both directions' IP bytes of its flows", SVG: barChart("src", " bytes", keyBars(tt.Src[0]))},
		{ID: "dst", Title: "Top responders by bytes", Note: "id.resp_h", SVG: barChart("dst", " bytes", keyBars(tt.Dst[0]))},
		{ID: "ports", Title: "Top responder ports by bytes", Note: "proto/id.resp_p", SVG: barChart("ports", " bytes", keyBars(tt.Ports[0]))},
		{ID: "lost", Title: "Duplicates and decode errors", Note: "packets by reason", SVG: barChart("lost", " packets", lost)},
		{ID: "tunnels", Title: "Tunnels", Note: "packets past dedup by innermost tunnel, and flow records with a tunnel parent", SVG: barChart("tunnels", "", tunnels)},
	}
	if a := s.ACSM; a != nil {
		sh := a.Shadow
		note := fmt.Sprintf("%s/%s; %d checks, 1 flow in %d sampled", a.Backend, a.Machine, sh.Checks, sh.Rate)
		charts = append(charts,
			chart{ID: "acsm-error", Title: "ACSM measured error", Note: note, SVG: barChart("acsm-error", "", []bar{
				{label: "measured error rate", value: sh.ErrorRate, color: palette[0]},
				{label: "upper bound (95%)", value: sh.ErrorBound, color: palette[9]},
				{label: "target", value: sh.Target, color: palette[4]}})},
			chart{ID: "memory", Title: "Memory of the structures", SVG: barChart("memory", " bytes", []bar{
				{label: "ACSM", value: float64(a.MemoryBytes), note: "B", color: palette[0]},
				{label: "dedup window", value: float64(s.DedupMemoryBytes), note: "B", color: palette[3]}})})
	}
	return charts
}
