package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/pipeline"
)

// Page is what a report shows: the replay's summary, its settings and
// what the collector gathered. Every figure on the page is the summary's
// or the series' own, and the page carries them all as JSON (the element
// with id "figures": {"summary", "series", "tops", "series_totals"}) for
// programs that read it.
type Page struct {
	Command  string             // the command line, shown as run
	Settings *pipeline.Settings // nil: not shown
	Summary  *pipeline.Summary
	Result   *Result
}

// SeriesTotals are the series summed over the buckets: packets equals
// the summary's unique_packets and duplicates its duplicates; started
// (and ended) the flow records less the interim ones, and states their
// final conn_states.
type SeriesTotals struct {
	Packets    uint64            `json:"packets"`
	Bytes      uint64            `json:"bytes"`
	Duplicates uint64            `json:"duplicates"`
	Tunnelled  uint64            `json:"tunnelled_packets"`
	Started    uint64            `json:"flows_started"`
	Ended      uint64            `json:"flows_ended"`
	States     map[string]uint64 `json:"conn_states"`
}

// Totals sums the series.
func (s *Series) Totals() SeriesTotals {
	t := SeriesTotals{States: map[string]uint64{}}
	for _, b := range s.Packets {
		t.Packets += b.Packets
		t.Bytes += b.Bytes
		t.Duplicates += b.Duplicates
		t.Tunnelled += b.Tunnelled
	}
	for _, b := range s.Flows {
		t.Started += b.Started
		t.Ended += b.Ended
		for i, n := range b.States {
			if n > 0 {
				t.States[acsm.ConnState(i).String()] += n
			}
		}
	}
	return t
}

// figures is the page's JSON block.
type figures struct {
	Summary *pipeline.Summary `json:"summary"`
	Series  *Series           `json:"series"`
	Tops    *TopTables        `json:"tops"`
	Totals  SeriesTotals      `json:"series_totals"`
}

// WriteFile writes the report to path, through a temporary file renamed
// into place, so a reader never finds half a report.
func WriteFile(path string, p *Page) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := Write(tmp, p); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write report: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// Write writes the report as one HTML file that fetches nothing.
func Write(w io.Writer, p *Page) error {
	v, err := p.view()
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, v); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// view is the template's data.
type view struct {
	Title, Command, Span string
	Tiles                []tile
	Charts               []chart
	Bars                 []chart
	FlowTables           []FlowTable
	KeyTables            []keyTableView
	Settings, Summary    []kv
	Warnings             []string
	Figures              template.HTML
}

type tile struct{ Key, Label, Value, Raw string }

type chart struct {
	ID, Title, Note string
	SVG             template.HTML
}

type kv struct{ Key, Value string }

type keyTableView struct {
	Title string
	KeyTable
	Total Row
}

func (p *Page) view() (*view, error) {
	s, r := p.Summary, p.Result
	if r == nil {
		r = &Result{Tops: NewTops(ReportTop)}
	}
	tops := r.Tops.Tables(ReportTop)
	totals := r.Series.Totals()
	fj, err := json.Marshal(figures{Summary: s, Series: &r.Series, Tops: tops, Totals: totals})
	if err != nil {
		return nil, err
	}
	v := &view{Title: "flowmon replay: " + strings.Join(s.Files, " "), Command: p.Command, Warnings: s.Warnings,
		// json.Marshal escapes <, > and &, so the block cannot end early.
		Figures: template.HTML(`<script type="application/json" id="figures">` + string(fj) + `</script>`)}
	if !s.TraceStart.IsZero() {
		v.Span = fmt.Sprintf("%s to %s (%.3f s of packet time), replayed in %.3f s",
			s.TraceStart.UTC().Format(time.RFC3339Nano), s.TraceEnd.UTC().Format(time.RFC3339Nano), s.TraceSeconds, s.RunSeconds)
	}
	var decodeErrors uint64
	for _, n := range s.DecodeErrors {
		decodeErrors += n
	}
	var alertsFired uint64
	for _, n := range s.Alerts {
		alertsFired += n
	}
	v.Tiles = []tile{
		{"packets", "packets", si(float64(s.Packets)), u(s.Packets)},
		{"bytes", "bytes", si(float64(s.Bytes)), u(s.Bytes)},
		{"flows", "flows", si(float64(s.Flows)), u(s.Flows)},
		{"unique_packets", "unique packets", si(float64(s.UniquePackets)), u(s.UniquePackets)},
		{"duplicates", "duplicates dropped", si(float64(s.Duplicates)), u(s.Duplicates)},
		{"decode_errors", "decode errors", si(float64(decodeErrors)), u(decodeErrors)},
		{"alerts", "alerts", si(float64(alertsFired)), u(alertsFired)},
	}
	if a := s.ACSM; a != nil {
		v.Tiles = append(v.Tiles, tile{"acsm.shadow.error_rate", "ACSM measured error",
			strconv.FormatFloat(a.Shadow.ErrorRate, 'g', 3, 64), strconv.FormatFloat(a.Shadow.ErrorRate, 'g', -1, 64)})
	}
	v.Charts = timeCharts(s, &r.Series)
	v.Bars = barCharts(s, &r.Series, tops)
	v.FlowTables = tops.Flows[:]
	for _, g := range []struct {
		what string
		t    [2]KeyTable
	}{{"originators (id.orig_h)", tops.Src}, {"responders (id.resp_h)", tops.Dst}, {"responder ports", tops.Ports}} {
		for _, kt := range g.t {
			v.KeyTables = append(v.KeyTables, keyTableView{Title: fmt.Sprintf("top %s by %s", g.what, kt.By), KeyTable: kt, Total: tops.Total})
		}
	}
	if p.Settings != nil {
		v.Settings = settingsRows(p.Settings)
	}
	if v.Summary, err = flatten(s); err != nil {
		return nil, err
	}
	return v, nil
}

func u(n uint64) string { return strconv.FormatUint(n, 10) }

// settingsRows lists the settings under their flags' names.
func settingsRows(st *pipeline.Settings) []kv {
	var rows []kv
	rv, rt := reflect.ValueOf(st).Elem(), reflect.TypeOf(st).Elem()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("yaml"), ",")
		if name == "" {
			continue
		}
		rows = append(rows, kv{name, fmt.Sprint(rv.Field(i).Interface())})
	}
	return rows
}

// flatten lists the summary's JSON keys, nested ones dotted, with their
// values as the JSON has them.
func flatten(s *pipeline.Summary) ([]kv, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	var rows []kv
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if len(x) == 0 {
				rows = append(rows, kv{prefix, "{}"})
			}
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(prefix+"."+k, x[k])
			}
		case []any:
			parts := make([]string, len(x))
			for i, e := range x {
				parts[i] = fmt.Sprint(e)
			}
			rows = append(rows, kv{prefix, strings.Join(parts, " ")})
		default:
			rows = append(rows, kv{prefix, fmt.Sprint(x)})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		walk(k, m[k])
	}
	return rows, nil
}
