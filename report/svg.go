package report

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// The charts are SVG drawn here, so the report is one file that fetches
// nothing and needs no script to show.
const (
	chartW, chartH         = 560, 220
	padL, padR, padT, padB = 56, 12, 10, 34
)

// line is one series of a chart: a value per bucket.
type line struct {
	name  string
	color string
	ys    []float64
}

// palette holds distinct colours for series and bars (Tableau 20's
// darker half, then its lighter).
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
	"#9c755f", "#bab0ac", "#1f77b4", "#aec7e8", "#98df8a", "#c5b0d5", "#c49c94", "#dbdb8d"}

// timeChart draws lines (areas when stacked) over the buckets; x0 is the
// time of the first bucket in seconds from the trace's start and dx the
// buckets' width in seconds.
func timeChart(id, unit string, x0, dx float64, lines []line, stacked bool) template.HTML {
	var b strings.Builder
	svgOpen(&b, id)
	n := 0
	for _, l := range lines {
		n = max(n, len(l.ys))
	}
	if n == 0 {
		noData(&b)
		return template.HTML(b.String())
	}
	tops := make([]float64, n) // the stack's top so far
	var ymax float64
	for i := range n {
		s := 0.0
		for _, l := range lines {
			if i < len(l.ys) {
				if stacked {
					s += l.ys[i]
				} else {
					s = math.Max(s, l.ys[i])
				}
			}
		}
		ymax = math.Max(ymax, s)
	}
	ymax, step := niceMax(ymax)
	xmin, xmax := x0, x0+float64(n)*dx
	X := func(x float64) float64 { return padL + (x-xmin)/(xmax-xmin)*(chartW-padL-padR) }
	Y := func(y float64) float64 { return chartH - padB - y/ymax*(chartH-padT-padB) }
	axes(&b, xmin, xmax, ymax, step, unit, X, Y)
	for li, l := range lines {
		var d strings.Builder
		if stacked {
			// The area between the stack before and after this line,
			// through the buckets' middles.
			for i := range n {
				y := tops[i]
				if i < len(l.ys) {
					y += l.ys[i]
				}
				cmd := 'L'
				if i == 0 {
					cmd = 'M'
				}
				fmt.Fprintf(&d, "%c%.1f %.1f", cmd, X(x0+(float64(i)+0.5)*dx), Y(y))
			}
			for i := n - 1; i >= 0; i-- {
				fmt.Fprintf(&d, "L%.1f %.1f", X(x0+(float64(i)+0.5)*dx), Y(tops[i]))
				if i < len(l.ys) {
					tops[i] += l.ys[i]
				}
			}
			fmt.Fprintf(&b, `<path class="series" data-series="%s" d="%sZ" fill="%s" stroke="none"><title>%s</title></path>`,
				esc(l.name), d.String(), l.color, esc(l.name))
			continue
		}
		for i, y := range l.ys {
			cmd := 'L'
			if i == 0 {
				cmd = 'M'
			}
			fmt.Fprintf(&d, "%c%.1f %.1f", cmd, X(x0+(float64(i)+0.5)*dx), Y(y))
		}
		if len(l.ys) == 1 {
			fmt.Fprintf(&d, "L%.1f %.1f", X(x0+dx), Y(l.ys[0]))
		}
		if li == 0 {
			// The first line's area, faint, so a chart of few points is
			// still seen.
			fmt.Fprintf(&b, `<path d="%sL%.1f %.1fL%.1f %.1fZ" fill="%s" fill-opacity="0.18" stroke="none"/>`,
				d.String(), X(x0+(float64(len(l.ys))-0.5)*dx), Y(0), X(x0+0.5*dx), Y(0), l.color)
		}
		fmt.Fprintf(&b, `<path class="series" data-series="%s" d="%s" fill="none" stroke="%s" stroke-width="1.5"><title>%s</title></path>`,
			esc(l.name), d.String(), l.color, esc(l.name))
	}
	b.WriteString("</svg>")
	legend(&b, lines)
	return template.HTML(b.String())
}

// bar is one bar of a bar chart.
type bar struct {
	label string
	value float64
	note  string // shown after the value
	color string
}

// barChart draws horizontal bars, one a row, longest first as given.
func barChart(id, unit string, bars []bar) template.HTML {
	var b strings.Builder
	h := padT + 22*max(len(bars), 3) + 24
	fmt.Fprintf(&b, `<svg class="chart" data-chart="%s" viewBox="0 0 %d %d" width="%d" height="%d" role="img">`, id, chartW, h, chartW, h)
	if len(bars) == 0 {
		fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#f6f6f6"/>`, chartW, h)
		fmt.Fprintf(&b, `<text class="nodata" x="%d" y="%d" text-anchor="middle">none</text></svg>`, chartW/2, h/2)
		return template.HTML(b.String())
	}
	vmax := 0.0
	for _, br := range bars {
		vmax = math.Max(vmax, br.value)
	}
	if vmax == 0 {
		vmax = 1
	}
	const labelW, valueW = 200, 110
	width := float64(chartW - labelW - valueW)
	for i, br := range bars {
		y := padT + 22*i
		w := br.value / vmax * width
		if br.value > 0 {
			w = math.Max(w, 1.5)
		}
		color := br.color
		if color == "" {
			color = palette[0]
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" class="lbl">%s</text>`, labelW-6, y+14, esc(clip(br.label, 30)))
		fmt.Fprintf(&b, `<rect class="bar" x="%d" y="%d" width="%.1f" height="16" fill="%s"><title>%s: %s%s</title></rect>`,
			labelW, y+2, w, color, esc(br.label), formatFull(br.value), esc(unit))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="val">%s%s</text>`, float64(labelW)+w+4, y+14, esc(si(br.value)), esc(br.note))
	}
	b.WriteString("</svg>")
	return template.HTML(b.String())
}

func svgOpen(b *strings.Builder, id string) {
	fmt.Fprintf(b, `<svg class="chart" data-chart="%s" viewBox="0 0 %d %d" width="%d" height="%d" role="img">`, id, chartW, chartH, chartW, chartH)
}

func noData(b *strings.Builder) {
	fmt.Fprintf(b, `<rect x="0" y="0" width="%d" height="%d" fill="#f6f6f6"/>`, chartW, chartH)
	fmt.Fprintf(b, `<text class="nodata" x="%d" y="%d" text-anchor="middle">none</text></svg>`, chartW/2, chartH/2)
}

// axes draws the grid, the y labels and the x labels (seconds).
func axes(b *strings.Builder, xmin, xmax, ymax, ystep float64, unit string, X, Y func(float64) float64) {
	for y := 0.0; y <= ymax*1.0001; y += ystep {
		fmt.Fprintf(b, `<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, padL, chartW-padR, Y(y), Y(y))
		fmt.Fprintf(b, `<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-4, Y(y)+4, esc(si(y)))
	}
	_, xstep := niceMax((xmax - xmin) / 1.2)
	for x := math.Ceil(xmin/xstep) * xstep; x <= xmax; x += xstep {
		fmt.Fprintf(b, `<line class="axis" x1="%.1f" x2="%.1f" y1="%d" y2="%d"/>`, X(x), X(x), chartH-padB, chartH-padB+4)
		fmt.Fprintf(b, `<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>`, X(x), chartH-padB+16, esc(si(x)))
	}
	fmt.Fprintf(b, `<line class="axis" x1="%d" x2="%d" y1="%d" y2="%d"/>`, padL, chartW-padR, chartH-padB, chartH-padB)
	fmt.Fprintf(b, `<text class="unit" x="%d" y="%d">%s</text>`, padL, chartH-4, esc("s from the trace's start; "+unit))
}

func legend(b *strings.Builder, lines []line) {
	if len(lines) < 2 {
		return
	}
	b.WriteString(`<div class="legend">`)
	for _, l := range lines {
		fmt.Fprintf(b, `<span><i style="background:%s"></i>%s</span>`, l.color, esc(l.name))
	}
	b.WriteString(`</div>`)
}

// niceMax returns a round bound at or above v and the step of about five
// gridlines up to it.
func niceMax(v float64) (top, step float64) {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1, 0.25
	}
	raw := v / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if step = m * mag; step >= raw {
			break
		}
	}
	return math.Ceil(v/step-1e-9) * step, step
}

// si spells v with an SI prefix and three significant digits.
func si(v float64) string {
	a := math.Abs(v)
	if a < 1e-9 {
		return "0"
	}
	for _, p := range []struct {
		f float64
		s string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if a >= p.f {
			return strconv.FormatFloat(v/p.f, 'g', 3, 64) + p.s
		}
	}
	if a != 0 && a < 0.01 {
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'g', 4, 64)
}

// formatFull spells v whole when it is a whole number, else to 4 digits.
func formatFull(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e18 {
		return " " + strconv.FormatFloat(v, 'f', 0, 64)
	}
	return " " + strconv.FormatFloat(v, 'g', 4, 64)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func esc(s string) string { return template.HTMLEscapeString(s) }
