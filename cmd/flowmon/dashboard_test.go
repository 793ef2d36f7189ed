package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// dashboardFile is the Grafana dashboard operators import (docs/run.md).
const dashboardFile = "../../docs/grafana/flowmon.json"

// grafanaDashboard is the part of Grafana's dashboard JSON model the
// tests read.
type grafanaDashboard struct {
	UID        string
	Title      string
	Templating struct {
		List []struct {
			Name, Type string
			Query      any
		}
	}
	Panels []grafanaPanel
}

type grafanaPanel struct {
	ID         int
	Type       string
	Title      string
	Datasource *struct{ Type, UID string }
	GridPos    struct{ H, W, X, Y int }
	Targets    []struct {
		RefID      string
		Expr       string
		Datasource *struct{ Type, UID string }
	}
	Panels []grafanaPanel // a collapsed row's
}

// target is one query of the dashboard, with the panel it draws.
type target struct{ panel, expr string }

func readDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// panels returns every panel, those of collapsed rows included.
func (d grafanaDashboard) panels() []grafanaPanel {
	var all []grafanaPanel
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			all = append(all, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return all
}

func (d grafanaDashboard) targets() []target {
	var ts []target
	for _, p := range d.panels() {
		for _, tg := range p.Targets {
			ts = append(ts, target{p.Title, tg.Expr})
		}
	}
	return ts
}

// TestDashboardModel holds docs/grafana/flowmon.json to what importing it
// needs: a Prometheus data source variable every panel and query uses (so
// the operator picks the data source at import), job and instance
// variables every query selects on (a fleet), unique panel ids, panels
// within Grafana's 24-column grid, and a query in every panel. What the
// queries return is TestE2EDashboardQueries's.
func TestDashboardModel(t *testing.T) {
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: both must be set", d.UID, d.Title)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	for name, typ := range map[string]string{"datasource": "datasource", "job": "query", "instance": "query"} {
		if vars[name] != typ {
			t.Errorf("variable %s: type %q, want %q", name, vars[name], typ)
		}
	}
	const ds = "${datasource}"
	ids := map[int]string{}
	for _, p := range d.panels() {
		if prev, ok := ids[p.ID]; ok {
			t.Errorf("panel %q: id %d is %q's too", p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		if g := p.GridPos; g.W < 1 || g.H < 1 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, g)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != ds {
			t.Errorf("panel %q: datasource %+v, want prometheus %s", p.Title, p.Datasource, ds)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.Datasource == nil || tg.Datasource.UID != ds {
				t.Errorf("panel %q query %s: datasource %+v, want %s", p.Title, tg.RefID, tg.Datasource, ds)
			}
			if tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %q: refId %q empty or repeated", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q query %s: no expr", p.Title, tg.RefID)
			}
			// Every selector of the query selects the chosen agents.
			sels := strings.Count(tg.Expr, "{")
			if n := strings.Count(tg.Expr, `job=~"$job", instance=~"$instance"`); n != sels {
				t.Errorf("panel %q query %s: %d of its %d selectors select job and instance: %s", p.Title, tg.RefID, n, sels, tg.Expr)
			}
		}
	}
}
