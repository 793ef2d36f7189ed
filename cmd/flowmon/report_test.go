package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"html"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/flowmon/flowmon/internal/testutil/headless"
	"github.com/flowmon/flowmon/record/connlog"
	"github.com/flowmon/flowmon/report"
)

// pageFigures is a report's JSON block, as the page in a browser has it.
type pageFigures struct {
	Summary map[string]any      `json:"summary"`
	Tops    report.TopTables    `json:"tops"`
	Totals  report.SeriesTotals `json:"series_totals"`
}

// TestReplayReport: a report of the bundled trace, loaded in Chromium,
// shows the figures the JSON summary of the same replay gives: its JSON
// block's summary is the summary, every summary key's cell and every
// tile says the summary's figure, the series add up to the summary's
// packets, duplicates, flows and conn_states, and the tops are the flow
// log's (flowmon flows --json).
func TestReplayReport(t *testing.T) {
	b := headless.New(t)
	dir := t.TempDir()
	page, flows := filepath.Join(dir, "r.html"), filepath.Join(dir, "flows.jsonl")
	var out, errb bytes.Buffer
	if code := run([]string{"replay", "--json", "--no-progress", "--report", page, "--flows-out", flows, sample}, &out, &errb); code != 0 {
		t.Fatalf("replay: exit %d: %s", code, errb.String())
	}
	var summary map[string]any
	dec := json.NewDecoder(&out)
	dec.UseNumber()
	if err := dec.Decode(&summary); err != nil {
		t.Fatal(err)
	}
	dom, console := b.DOM(t, page)
	if len(console) > 0 {
		t.Errorf("console messages:\n%s", strings.Join(console, "\n"))
	}
	m := regexp.MustCompile(`<script type="application/json" id="figures">(.*?)</script>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatal("no figures in the page's DOM")
	}
	var fig pageFigures
	dec = json.NewDecoder(strings.NewReader(m[1]))
	dec.UseNumber()
	if err := dec.Decode(&fig); err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, fig.Summary, summary) {
		t.Errorf("the page's summary differs from --json's:\npage %v\njson %v", fig.Summary, summary)
	}

	// Every cell of the page's summary table is the JSON's figure.
	flat := map[string]string{}
	flattenJSON("", summary, flat)
	cells := regexp.MustCompile(`<td data-key="([^"]+)">([^<]*)</td>`).FindAllStringSubmatch(dom, -1)
	if len(cells) < 40 {
		t.Fatalf("%d summary cells", len(cells))
	}
	for _, c := range cells {
		if want, ok := flat[c[1]]; !ok || html.UnescapeString(c[2]) != want {
			t.Errorf("summary cell %s: page %q, --json %q", c[1], c[2], want)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(flat)) {
		if !strings.Contains(dom, `data-key="`+k+`"`) {
			t.Errorf("summary key %s is not on the page", k)
		}
	}
	tiles := regexp.MustCompile(`data-figure="([^"]+)" data-value="([^"]*)"`).FindAllStringSubmatch(dom, -1)
	for _, tl := range tiles {
		want, ok := flat[tl[1]]
		if tl[1] == "decode_errors" || tl[1] == "alerts" {
			want, ok = "0", true // the bundled trace has neither
		}
		if !ok || tl[2] != want {
			t.Errorf("tile %s: page %s, --json %s", tl[1], tl[2], want)
		}
	}
	if len(tiles) < 7 {
		t.Errorf("%d tiles", len(tiles))
	}

	// The series add up to the summary.
	tot := fig.Totals
	num := func(k string) uint64 {
		n, err := json.Number(flat[k]).Int64()
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		return uint64(n)
	}
	if tot.Packets != num("unique_packets") || tot.Duplicates != num("duplicates") || tot.Started != num("flows") ||
		tot.Ended != num("flows") || tot.Started != num("records.report.written") {
		t.Errorf("series totals %+v; summary %d unique packets, %d duplicates, %d flows", tot, num("unique_packets"), num("duplicates"), num("flows"))
	}
	for st, n := range tot.States {
		if n != num("conn_states."+st) {
			t.Errorf("conn_state %s: series %d, summary %d", st, n, num("conn_states."+st))
		}
	}

	// The tops are the flow log's.
	var fromLog report.TopTables
	out.Reset()
	if code := run([]string{"flows", "--json", flows}, &out, &errb); code != 0 {
		t.Fatalf("flows: exit %d: %s", code, errb.String())
	}
	if err := json.Unmarshal(out.Bytes(), &fromLog); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(fig.Tops)
	c, _ := json.Marshal(fromLog)
	if !bytes.Equal(a, c) {
		t.Errorf("the page's tops differ from flowmon flows':\npage  %s\nflows %s", a, c)
	}
}

// TestTopAgrees: replay --top 10 prints the tables flowmon flows --top
// 10 prints of the replay's flow log, and their rows are the log's sums.
func TestTopAgrees(t *testing.T) {
	dir := t.TempDir()
	flows := filepath.Join(dir, "flows.jsonl")
	var out, errb bytes.Buffer
	if code := run([]string{"replay", "--no-progress", "--top", "10", "--flows-out", flows, sample}, &out, &errb); code != 0 {
		t.Fatalf("replay: exit %d: %s", code, errb.String())
	}
	_, tables, ok := strings.Cut(out.String(), "\n\n")
	if !ok {
		t.Fatalf("no tables after the summary:\n%s", out.String())
	}
	var fl bytes.Buffer
	if code := run([]string{"flows", "--top", "10", flows}, &fl, &errb); code != 0 {
		t.Fatalf("flows: exit %d: %s", code, errb.String())
	}
	if tables != fl.String() {
		t.Errorf("replay --top 10:\n%s\nflowmon flows --top 10:\n%s", tables, fl.String())
	}

	// Sum the log by originator, responder and port.
	f, err := os.Open(flows)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type row struct{ flows, packets, bytes uint64 }
	sums := map[string]map[string]row{"src": {}, "dst": {}, "ports": {}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r connlog.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		for dim, k := range map[string]string{"src": r.OrigH.String(), "dst": r.RespH.String(), "ports": report.Port{Proto: r.Proto, Port: r.RespP}.String()} {
			s := sums[dim][k]
			s.flows++
			s.packets += r.OrigPkts + r.RespPkts
			s.bytes += r.OrigIPBytes + r.RespIPBytes
			sums[dim][k] = s
		}
	}
	out.Reset()
	if code := run([]string{"flows", "--json", "--top", "10", flows}, &out, &errb); code != 0 {
		t.Fatalf("flows: exit %d: %s", code, errb.String())
	}
	var tt report.TopTables
	if err := json.Unmarshal(out.Bytes(), &tt); err != nil {
		t.Fatal(err)
	}
	for dim, tables := range map[string][2]report.KeyTable{"src": tt.Src, "dst": tt.Dst, "ports": tt.Ports} {
		for _, kt := range tables {
			if !kt.Exact || len(kt.Rows) != 10 {
				t.Fatalf("%s by %s: exact %v, %d rows", dim, kt.By, kt.Exact, len(kt.Rows))
			}
			for _, r := range kt.Rows {
				if s := sums[dim][r.Key]; s != (row{r.Flows, r.Packets, r.Bytes}) {
					t.Errorf("%s by %s: %s is %+v, the log sums to %+v", dim, kt.By, r.Key, r.Row, s)
				}
			}
		}
	}
	if !strings.Contains(fl.String(), "top 10 responder ports by bytes") {
		t.Errorf("no ports table:\n%s", fl.String())
	}
}

// flattenJSON sets out's dotted keys to the values of v as the report's
// summary table spells them.
func flattenJSON(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 && prefix != "" {
			out[prefix] = "{}"
		}
		for k, e := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flattenJSON(p, e, out)
		}
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, jsonString(e))
		}
		out[prefix] = strings.Join(parts, " ")
	default:
		out[prefix] = jsonString(x)
	}
}

func jsonString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		if x {
			return "true"
		}
		return "false"
	}
	return ""
}

func jsonEqual(t *testing.T, a, b any) bool {
	x, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(x, y)
}

// TestReportAlerts: the report's alerts are the summary's, by rule, each
// drawn on the timeline.
func TestReportAlerts(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and replays a trace of floods and scans")
	}
	dir := t.TempDir()
	trace, page := filepath.Join(dir, "attacks.pcap"), filepath.Join(dir, "r.html")
	var out, errb bytes.Buffer
	if code := run([]string{"gen", "--flows", "20000", "--mix", "synflood=0.5,scan=0.3,normal=0.2", "--seed", "3", "-o", trace}, &out, &errb); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, errb.String())
	}
	out.Reset()
	if code := run([]string{"replay", "--json", "--no-progress", "--report", page, trace}, &out, &errb); code != 0 {
		t.Fatalf("replay: exit %d: %s", code, errb.String())
	}
	var s struct{ Alerts map[string]uint64 }
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<script type="application/json" id="figures">(.*?)</script>`).FindSubmatch(html)
	if m == nil {
		t.Fatal("no figures in the page")
	}
	var fig struct {
		Series report.Series `json:"series"`
	}
	if err := json.Unmarshal(m[1], &fig); err != nil {
		t.Fatal(err)
	}
	var fired uint64
	for rule, n := range s.Alerts {
		fired += n
		if fig.Series.AlertsByRule[rule] != n {
			t.Errorf("%s: %d alerts in the summary, %d in the report", rule, n, fig.Series.AlertsByRule[rule])
		}
	}
	if fired == 0 || len(fig.Series.Alerts) != int(fired) {
		t.Errorf("%d alerts fired, %d on the timeline", fired, len(fig.Series.Alerts))
	}
	if n := strings.Count(string(html), `class="alert"`); n != int(fired) {
		t.Errorf("%d alert bars drawn for %d alerts", n, fired)
	}
}
