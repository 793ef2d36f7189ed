package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/pipeline/kernelflows"
	"github.com/flowmon/flowmon/rules"
)

// ruleTestFile is a `flowmon rules test` file: traces, the rules to run
// on them, and the alerts expected.
type ruleTestFile struct {
	// RuleFiles are the rules files (relative to the test file), or
	// "default" for the embedded rules; their rules are run together.
	RuleFiles []string   `yaml:"rule_files"`
	Tests     []ruleTest `yaml:"tests"`
}

type ruleTest struct {
	Name string `yaml:"name"`
	// Pcap (relative to the test file) or Gen, a flowmon gen recipe.
	Pcap    string     `yaml:"pcap"`
	Gen     *genRecipe `yaml:"gen"`
	Workers int        `yaml:"workers"`
	// FlowState is where the replay keeps the flows: user (the default)
	// or kernel (pipeline.Settings.FlowState), whose rules see flow
	// events instead of packets.
	FlowState string `yaml:"flow_state"`
	// Alerts are every alert the test expects to fire: an alert fired
	// that none matches, or a count that differs, fails the test.
	Alerts []expectedAlert `yaml:"alerts"`
}

type genRecipe struct {
	Flows    int           `yaml:"flows"`
	Mix      string        `yaml:"mix"`
	Seed     uint64        `yaml:"seed"`
	Duration time.Duration `yaml:"duration"`
	DupRate  float64       `yaml:"dup_rate"`
}

// expectedAlert matches the fired alerts with this alertname and these
// labels (a subset of theirs); Count of them must fire (default 1).
type expectedAlert struct {
	Alertname string            `yaml:"alertname"`
	Labels    map[string]string `yaml:"labels"`
	Count     *int              `yaml:"count"`
}

// RuleTestResult is the outcome of one test of a rules test file.
type RuleTestResult struct {
	Name string
	// Err says why the test could not run; Diffs, what fired that was
	// not expected and what was expected that did not fire (none: the
	// test passed).
	Err   error
	Diffs []string
}

// RunRuleTests runs the tests of a rules test file (flowmon rules test),
// in the spirit of promtool's rule tests: each replays its trace (a pcap,
// or a trace generated from a flowmon gen recipe) through the file's
// rules and compares the alerts that fired with those it expects. The
// error is the file's own (it cannot be read, its rules do not load).
func RunRuleTests(path string) ([]RuleTestResult, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tf ruleTestFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&tf); err != nil {
		return nil, fmt.Errorf("read test file: %w", err)
	}
	dir := filepath.Dir(path)
	set, err := loadRuleFiles(dir, tf.RuleFiles)
	if err != nil {
		return nil, err
	}
	res := make([]RuleTestResult, len(tf.Tests))
	for i, t := range tf.Tests {
		res[i].Name = cmpOr(t.Name, fmt.Sprintf("test %d", i+1))
		res[i].Diffs, res[i].Err = t.run(dir, set)
	}
	return res, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// loadRuleFiles compiles the named files' rules as one file's groups.
func loadRuleFiles(dir string, names []string) (func() (*rules.Set, error), error) {
	if len(names) == 0 {
		return nil, errors.New("rule_files: name at least one (or default)")
	}
	merged := &rules.File{Name: strings.Join(names, ",")}
	for _, n := range names {
		var f *rules.File
		var err error
		if n == "default" {
			f, err = rules.Parse(rules.DefaultName, rules.DefaultRules())
		} else {
			f, err = rules.ParseFile(filepath.Join(dir, n))
		}
		if err != nil {
			return nil, err
		}
		merged.Groups = append(merged.Groups, f.Groups...)
	}
	// Each test gets its own compiled set: counters start empty.
	return func() (*rules.Set, error) { return rules.Compile(merged) }, nil
}

// run replays the test's trace through the rules and compares what fired
// with what was expected.
func (t *ruleTest) run(dir string, newSet func() (*rules.Set, error)) ([]string, error) {
	trace, cleanup, err := t.trace(dir)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	set, err := newSet()
	if err != nil {
		return nil, err
	}
	rec := alerts.NewMemory("test")
	cfg := pipeline.DefaultConfig()
	if t.Workers > 0 {
		cfg.Workers = t.Workers
	}
	switch t.FlowState {
	case "", pipeline.FlowStateUser:
	case pipeline.FlowStateKernel:
		cfg.KernelState = &kernelflows.Config{Cells: cfg.MaxFlows}
	default:
		return nil, fmt.Errorf("flow_state %q: want user or kernel", t.FlowState)
	}
	cfg.Consumers = []pipeline.NewConsumer{RulesConsumer(rules.NewEngine(set, alerts.NewManager(alerts.ManagerOptions{}, rec)))}
	if _, err := pipeline.Replay(context.Background(), []string{trace}, pipeline.ReplayOptions{Config: cfg}); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return compareAlerts(t.Alerts, rec.Firing()), nil
}

// trace returns the test's pcap, generating it into a temporary file for
// a gen recipe.
func (t *ruleTest) trace(dir string) (string, func(), error) {
	switch {
	case t.Pcap != "" && t.Gen != nil:
		return "", nil, errors.New("give pcap or gen, not both")
	case filepath.IsAbs(t.Pcap):
		return t.Pcap, func() {}, nil
	case t.Pcap != "":
		return filepath.Join(dir, t.Pcap), func() {}, nil
	case t.Gen == nil:
		return "", nil, errors.New("give a pcap or a gen recipe")
	}
	opt := gen.DefaultOptions()
	if t.Gen.Flows > 0 {
		opt.Flows = t.Gen.Flows
	}
	if t.Gen.Mix != "" {
		m, err := gen.ParseMix(t.Gen.Mix)
		if err != nil {
			return "", nil, err
		}
		opt.Mix = m
	}
	if t.Gen.Seed != 0 {
		opt.Seed = t.Gen.Seed
	}
	if t.Gen.Duration > 0 {
		opt.Duration = t.Gen.Duration
	}
	opt.DupRate = t.Gen.DupRate
	tmp, err := os.MkdirTemp("", "flowmon-rules-test-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(tmp) }
	name := filepath.Join(tmp, "trace.pcap")
	f, err := os.Create(name)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	_, gerr := gen.Generate(f, io.Discard, opt)
	if err := errors.Join(gerr, f.Close()); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("generate trace: %w", err)
	}
	return name, cleanup, nil
}

// compareAlerts lists the differences between the expected alerts and the
// fired ones.
func compareAlerts(want []expectedAlert, fired []alerts.Alert) []string {
	var diffs []string
	used := make([]bool, len(fired))
	for _, w := range want {
		n := 0
		for i, a := range fired {
			if w.matches(&a) {
				used[i] = true
				n++
			}
		}
		if c := w.count(); n != c {
			diffs = append(diffs, fmt.Sprintf("%s: %d fired, want %d", w, n, c))
		}
	}
	for i, a := range fired {
		if !used[i] {
			diffs = append(diffs, fmt.Sprintf("unexpected alert %s %v", a.Name(), a.Labels.Map()))
		}
	}
	return diffs
}

func (w expectedAlert) count() int {
	if w.Count == nil {
		return 1
	}
	return *w.Count
}

func (w expectedAlert) matches(a *alerts.Alert) bool {
	if a.Name() != w.Alertname {
		return false
	}
	for k, v := range w.Labels {
		if a.Labels.Get(k) != v {
			return false
		}
	}
	return true
}

func (w expectedAlert) String() string {
	if len(w.Labels) == 0 {
		return w.Alertname
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(w.Labels)) {
		fmt.Fprintf(&b, " %s=%s", k, w.Labels[k])
	}
	return w.Alertname + b.String()
}
