package report

import (
	"encoding/json"
	"image"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/testutil/headless"
	"github.com/flowmon/flowmon/pipeline"
)

// chartIDs are the charts a report draws.
var chartIDs = []string{"packets", "bytes", "flows", "newflows", "states", "alerts", "src", "dst", "ports", "lost", "tunnels", "acsm-error", "memory"}

// fullPage is a report with something in every chart: packets (some
// tunnelled, some duplicates) over a minute, flows of several states,
// alerts, decode errors.
func fullPage(t *testing.T) *Page {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewCollector(10)
	cons, err := c.Consumer()(0, 1, pipeline.Lookups{})
	if err != nil {
		t.Fatal(err)
	}
	dup := cons.(pipeline.DuplicateConsumer)
	var ev acsm.Event
	for i := range 60_000 {
		p := capture.Packet{Timestamp: start.Add(time.Duration(i) * time.Millisecond), WireLen: uint32(60 + i%1400)}
		if i%7 == 0 {
			p.Tunnels, p.Tunnel = 1, capture.TunnelVXLAN
		}
		cons.Packet(&p, &ev)
		if i%50 == 0 {
			dup.Duplicate(&p)
		}
	}
	fs := flows(3000, 200, 9)
	states := []acsm.ConnState{acsm.SF, acsm.S0, acsm.REJ, acsm.RSTO, acsm.OTH}
	for i := range fs {
		fs[i].Start = start.Add(time.Duration(i) * 20 * time.Millisecond).UnixNano()
		fs[i].End = fs[i].Start + int64(i%40)*int64(time.Second)/10
		fs[i].State = states[i%len(states)]
		if i%9 == 0 {
			fs[i].TunnelParent = 1
		}
	}
	if err := c.Sink().Sink.WriteFlows(fs); err != nil {
		t.Fatal(err)
	}
	as := c.AlertSink()
	for i := range 12 {
		a := alerts.Alert{Labels: alerts.Labels{{Name: "alertname", Value: []string{"SYNFlood", "PortScan"}[i%2]},
			{Name: "dst", Value: netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}).String()}, {Name: "severity", Value: "warning"}},
			StartsAt: start.Add(time.Duration(i*4) * time.Second), Count: 1, Value: 100}
		as.Send(a)
		if i%3 != 0 {
			a.EndsAt = a.StartsAt.Add(3 * time.Second)
			as.Send(a)
		}
	}
	s := &pipeline.Summary{Files: []string{"synthetic.pcap"}, Packets: 61_300, Bytes: 44_000_000, Decoded: 61_250, Flows: 3000,
		UniquePackets: 60_000, Duplicates: 1200, TraceStart: start, TraceEnd: start.Add(time.Minute), TraceSeconds: 60,
		DecodeErrors: map[string]uint64{"ip_header_truncated": 30, "bad_ip_version": 20}, Skipped: map[string]uint64{"not_ip": 50},
		ConnStates: map[string]uint64{"SF": 600, "S0": 600, "REJ": 600, "RSTO": 600, "OTH": 600},
		Alerts:     map[string]uint64{"SYNFlood": 6, "PortScan": 6}, DedupMemoryBytes: 1 << 20,
		ACSM: &pipeline.ACSMSummary{Backend: "dleft", Machine: "zeek", MemoryBytes: 1 << 21,
			Shadow: pipeline.ShadowSummary{Rate: 1024, Target: 0.001, Checks: 3000, WrongState: 1, ErrorRate: 1.0 / 3000, ErrorBound: 0.0015}}}
	set := pipeline.DefaultSettings()
	return &Page{Command: "flowmon replay --report r.html synthetic.pcap", Settings: &set, Summary: s, Result: c.Result()}
}

// layoutScript, added to a copy of a page, writes where each chart is
// drawn into the DOM, for the test to look at those areas of a
// screenshot.
const layoutScript = `<script>
const r = {};
for (const s of document.querySelectorAll("svg[data-chart]")) {
  const b = s.getBoundingClientRect();
  r[s.dataset.chart] = [b.left + scrollX, b.top + scrollY, b.width, b.height];
}
const p = document.createElement("pre"); p.id = "layout"; p.textContent = JSON.stringify(r);
document.body.appendChild(p);
</script></body>`

// TestPageInChromium: Chromium loads a report with no console message,
// and draws every chart: each SVG has its marks (paths, bars) with
// geometry, and its area of a screenshot is not blank.
func TestPageInChromium(t *testing.T) {
	b := headless.New(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	if err := WriteFile(page, fullPage(t)); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?i)(src|href)="(https?:)?//`).Find(html); m != nil {
		t.Errorf("the page fetches %s", m)
	}
	dom, console := b.DOM(t, page)
	if len(console) > 0 {
		t.Errorf("console messages:\n%s", strings.Join(console, "\n"))
	}
	for _, id := range chartIDs {
		svg := regexp.MustCompile(`(?s)<svg class="chart" data-chart="` + regexp.QuoteMeta(id) + `".*?</svg>`).FindString(dom)
		if svg == "" {
			t.Errorf("chart %s: no SVG in the DOM", id)
			continue
		}
		marks := regexp.MustCompile(`class="(series|bar|alert)"[^>]*?(d="M[^"]{10,}"|width="[1-9][0-9.]*")|(d="M[^"]{10,}"|width="[1-9][0-9.]*")[^>]*class="(series|bar|alert)"`).FindAllString(svg, -1)
		if len(marks) == 0 || strings.Contains(svg, `class="nodata"`) {
			t.Errorf("chart %s: no mark drawn:\n%.400s", id, svg)
		}
	}

	withLayout := filepath.Join(dir, "layout.html")
	if err := os.WriteFile(withLayout, []byte(strings.Replace(string(html), "</body>", layoutScript, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, _ = b.DOM(t, withLayout)
	m := regexp.MustCompile(`<pre id="layout">([^<]*)</pre>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatal("the layout script wrote nothing")
	}
	var rects map[string][4]float64
	if err := json.Unmarshal([]byte(m[1]), &rects); err != nil {
		t.Fatal(err)
	}
	height := 0
	for _, r := range rects {
		height = max(height, int(r[1]+r[3])+10)
	}
	img, console := b.Screenshot(t, withLayout, 1280, height)
	if len(console) > 0 {
		t.Errorf("console messages:\n%s", strings.Join(console, "\n"))
	}
	for _, id := range chartIDs {
		r, ok := rects[id]
		if !ok || r[2] < 100 || r[3] < 50 {
			t.Errorf("chart %s: drawn at %v", id, r)
			continue
		}
		area := image.Rect(int(r[0]), int(r[1]), int(r[0]+r[2]), int(r[1]+r[3]))
		if v := headless.Variance(img, area); v < 50 {
			t.Errorf("chart %s: its area %v of the screenshot is blank (variance %.1f)", id, area, v)
		}
	}
}

// TestPageFigures: the page's JSON block holds the summary given, and
// its series' totals are the series'.
func TestPageFigures(t *testing.T) {
	p := fullPage(t)
	v, err := p.view()
	if err != nil {
		t.Fatal(err)
	}
	js := strings.TrimSuffix(strings.TrimPrefix(string(v.Figures), `<script type="application/json" id="figures">`), `</script>`)
	var f struct {
		Summary pipeline.Summary `json:"summary"`
		Totals  SeriesTotals     `json:"series_totals"`
		Tops    TopTables        `json:"tops"`
	}
	if err := json.Unmarshal([]byte(js), &f); err != nil {
		t.Fatal(err)
	}
	if f.Summary.Packets != p.Summary.Packets || f.Summary.ACSM.Shadow.Checks != 3000 || f.Summary.DecodeErrors["bad_ip_version"] != 20 {
		t.Errorf("the page's summary: %+v", f.Summary)
	}
	if f.Totals.Packets != 60_000 || f.Totals.Duplicates != 1200 || f.Totals.Started != 3000 || f.Totals.Ended != 3000 || f.Totals.States["SF"] != 600 {
		t.Errorf("series totals %+v", f.Totals)
	}
	if f.Tops.Total.Flows != 3000 || len(f.Tops.Src[0].Rows) != ReportTop {
		t.Errorf("tops %+v", f.Tops.Total)
	}
}
