// Package ruleseval measures the default detection rules (docs/rules.md):
// their recall on flowmon gen traces that mix each attack scenario into
// benign traffic, their false alarms on benign traffic alone, and what
// they raise on real captures. The traces' ground truth says which flows
// belong to which scenario, so each alert is judged against it.
package ruleseval

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flowmon/flowmon/agent"
	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/rules"
)

// Config is what the evaluation runs.
type Config struct {
	Flows int    // flows per trace (at least 100,000 for docs/rules.md)
	Seed  uint64 // the traces' seed
	// Captures, when set, is a folder of real captures to run the rules
	// over (../shared/pcaps/real), with its MANIFEST.tsv.
	Captures string
	// Dir holds the generated traces (a temporary folder when empty).
	Dir string
}

// trace is one row of the recall table: a mix and the scenario it adds.
type trace struct {
	name     string
	mix      gen.Mix
	scenario string // the attack mixed in ("" for benign only)
	dupRate  float64
}

var traces = []trace{
	{name: "benign", mix: gen.Mix{Normal: 1}},
	{name: "synflood", mix: gen.Mix{Normal: 0.99, SYNFlood: 0.01}, scenario: "synflood"},
	{name: "scan", mix: gen.Mix{Normal: 0.99, Scan: 0.01}, scenario: "scan"},
	{name: "heavy", mix: gen.Mix{Normal: 0.99, Heavy: 0.01}, scenario: "heavy"},
	{name: "duplicates", mix: gen.Mix{Normal: 1}, scenario: "duplicates", dupRate: 0.3},
}

// Run prints the tables.
func Run(w io.Writer, cfg Config) error {
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "flowmon-ruleseval-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	fmt.Fprintf(w, "## Default rules on flowmon gen traces (%d flows each, seed %d)\n\n", cfg.Flows, cfg.Seed)
	fmt.Fprintln(w, "| trace | attack instances | detected (recall) | alerts by rule | alerts on benign flows (false alarms) |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for i, tr := range traces {
		row, err := runTrace(dir, tr, cfg.Flows, cfg.Seed+uint64(i))
		if err != nil {
			return fmt.Errorf("trace %s: %w", tr.name, err)
		}
		fmt.Fprintln(w, row)
	}
	fmt.Fprintln(w)
	if cfg.Captures != "" {
		return runCaptures(w, cfg.Captures)
	}
	return nil
}

// runTrace generates one trace, replays it with the default rules, and
// judges every alert against the truth.
func runTrace(dir string, tr trace, flows int, seed uint64) (string, error) {
	opt := gen.DefaultOptions()
	opt.Flows, opt.Mix, opt.Seed, opt.Snaplen, opt.DupRate = flows, tr.mix, seed, 96, tr.dupRate
	pcap := filepath.Join(dir, tr.name+".pcap")
	var truthBuf bytes.Buffer
	f, err := os.Create(pcap)
	if err != nil {
		return "", err
	}
	g, err := gen.New(opt)
	if err != nil {
		f.Close()
		return "", err
	}
	if _, err := g.WriteTo(f, &truthBuf); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	truth, err := gen.ReadTruth(&truthBuf)
	if err != nil {
		return "", err
	}
	fired, err := replay(pcap)
	os.Remove(pcap)
	if err != nil {
		return "", err
	}

	j := newJudge(truth)
	instances, detected, falseAlarms := j.score(tr.scenario, fired)
	recall := "-"
	if instances > 0 {
		recall = fmt.Sprintf("%d (%.0f%%)", detected, 100*float64(detected)/float64(instances))
	}
	inst := "-"
	if tr.scenario != "" {
		inst = fmt.Sprintf("%d %s", instances, j.unit(tr.scenario))
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %d |", tr.name, inst, recall, countByRule(fired), falseAlarms), nil
}

// replay runs the default rules over a capture and returns what fired.
func replay(pcap string) ([]alerts.Alert, error) {
	set, err := rules.Default()
	if err != nil {
		return nil, err
	}
	rec := alerts.NewMemory("eval")
	cfg := pipeline.DefaultConfig()
	cfg.Consumers = []pipeline.NewConsumer{agent.RulesConsumer(rules.NewEngine(set, alerts.NewManager(alerts.ManagerOptions{}, rec)))}
	// A damaged capture's packets before the damage are replayed: their
	// alerts count, with the error.
	_, err = pipeline.Replay(context.Background(), []string{pcap}, pipeline.ReplayOptions{Config: cfg})
	return rec.Firing(), err
}

// judge knows, from a trace's truth, which hosts and flows belong to
// which scenario.
type judge struct {
	floodTargets map[netip.Addr]bool // synflood: responders
	scanners     map[netip.Addr]bool // scan: originators
	heavy        map[flowID]bool     // heavy: flows
	benignHosts  map[netip.Addr]bool // hosts of normal flows
}

type flowID struct {
	src, dst netip.Addr
	sp, dp   uint16
}

func newJudge(truth []gen.Truth) *judge {
	j := &judge{floodTargets: map[netip.Addr]bool{}, scanners: map[netip.Addr]bool{}, heavy: map[flowID]bool{}, benignHosts: map[netip.Addr]bool{}}
	for _, t := range truth {
		switch t.Scenario {
		case "synflood":
			j.floodTargets[t.RespH] = true
		case "scan":
			j.scanners[t.OrigH] = true
		case "heavy":
			j.heavy[flowID{t.OrigH, t.RespH, t.OrigP, t.RespP}] = true
		}
	}
	return j
}

func (j *judge) unit(scenario string) string {
	switch scenario {
	case "synflood":
		return "flood targets"
	case "scan":
		return "scanners"
	case "heavy":
		return "heavy flows"
	}
	return "duplicated traces"
}

// score counts the scenario's instances, those an alert of the scenario's
// rule names, and the alerts that name nothing of any attack (false
// alarms).
func (j *judge) score(scenario string, fired []alerts.Alert) (instances, detected, falseAlarms int) {
	hit := map[any]bool{}
	for _, a := range fired {
		var id any
		var of string // the scenario the alert names an instance of
		switch a.Name() {
		case "SYNFlood":
			if d := addr(a.Labels.Get("dst")); j.floodTargets[d] {
				id, of = d, "synflood"
			}
		case "PortScan", "HostSweep":
			if s := addr(a.Labels.Get("src")); j.scanners[s] {
				id, of = s, "scan"
			}
		case "HeavyHitter":
			f := flowID{addr(a.Labels.Get("src")), addr(a.Labels.Get("dst")), a.Flow.SrcPort, a.Flow.DstPort}
			if j.heavy[f] {
				id, of = f, "heavy"
			}
		case "DuplicatePackets":
			if scenario == "duplicates" {
				id, of = "dups", "duplicates"
			}
		}
		switch {
		case id == nil:
			falseAlarms++
		case of == scenario:
			hit[id] = true
		}
	}
	switch scenario {
	case "synflood":
		instances = len(j.floodTargets)
	case "scan":
		instances = len(j.scanners)
	case "heavy":
		instances = len(j.heavy)
	case "duplicates":
		instances = 1
	}
	return instances, len(hit), falseAlarms
}

func addr(s string) netip.Addr {
	a, _ := netip.ParseAddr(s)
	return a
}

func countByRule(fired []alerts.Alert) string {
	n := map[string]int{}
	for _, a := range fired {
		n[a.Name()]++
	}
	if len(n) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(slices.Values(mapsKeys(n))) {
		parts = append(parts, fmt.Sprintf("%s %d", k, n[k]))
	}
	return strings.Join(parts, ", ")
}
