package rules

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"github.com/flowmon/flowmon/conferr"
	"github.com/flowmon/flowmon/internal/yamlnode"
)

// ParseFile reads and checks a rules file.
func ParseFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read rules: %w", err)
	}
	return Parse(path, data)
}

// Parse checks a rules file's content strictly: unknown fields, wrong
// types, bad CIDRs, ports, durations and names, unknown kinds, duplicate
// alert names in a group, and templates that do not compile are errors.
// It reports every error of the file at once, as conferr.Errors in the
// file's order, each naming name:line:col and the rule, and wrapping
// ErrInvalid.
func Parse(name string, data []byte) (*File, error) {
	p := &parser{file: name}
	f := &File{Name: name}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, conferr.Join([]*conferr.Error{p.syntaxError(err, data)})
	}
	if len(doc.Content) == 0 {
		return nil, conferr.Join([]*conferr.Error{{File: name, Line: 1, Col: 1, Msg: "empty file: want a mapping with groups", Err: ErrInvalid}})
	}
	root := doc.Content[0]
	seenGroups := map[string]bool{}
	p.mapping(root, map[string]func(*yaml.Node){
		"groups": func(n *yaml.Node) {
			for _, gn := range p.sequence(n) {
				g := p.group(gn)
				if g.Name != "" && seenGroups[g.Name] {
					p.errf(gn, "group %q defined twice", g.Name)
				}
				seenGroups[g.Name] = true
				f.Groups = append(f.Groups, g)
			}
		},
	}, "groups")
	if err := conferr.Join(p.errs); err != nil {
		return nil, err
	}
	return f, nil
}

// parser walks the YAML tree, collecting errors instead of stopping.
type parser struct {
	file     string
	ruleName string // the alert name of the rule being read
	errs     []*conferr.Error
}

func (p *parser) errf(n *yaml.Node, format string, args ...any) {
	p.errs = append(p.errs, &conferr.Error{File: p.file, Line: n.Line, Col: n.Column, In: ruleIn(p.ruleName), Msg: fmt.Sprintf(format, args...), Err: ErrInvalid})
}

// syntaxError turns yaml.v3's syntax error in data into an error at the
// line it means.
func (p *parser) syntaxError(err error, data []byte) *conferr.Error {
	e := &conferr.Error{File: p.file, Line: 1, Col: 1, Err: ErrInvalid}
	line, msg := yamlnode.SyntaxError(err, yamlnode.Lines(data))
	e.Line, e.Msg = max(line, 1), msg
	return e
}

// mapping calls fields[key] with each key's value; unknown and repeated
// keys, and missing required ones, are errors.
func (p *parser) mapping(n *yaml.Node, fields map[string]func(*yaml.Node), required ...string) {
	n = yamlnode.Resolve(n)
	if n.Kind != yaml.MappingNode {
		p.errf(n, "want a mapping, got %s", yamlnode.Describe(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f, ok := fields[k.Value]
		switch {
		case !ok:
			p.errf(k, "unknown field %q (want one of %s)", k.Value, strings.Join(sortedKeys(fields), ", "))
		case seen[k.Value]:
			p.errf(k, "field %q given twice", k.Value)
		default:
			seen[k.Value] = true
			f(v)
		}
	}
	for _, r := range required {
		if !seen[r] {
			p.errf(n, "missing field %q", r)
		}
	}
}

func (p *parser) sequence(n *yaml.Node) []*yaml.Node {
	if n.Kind != yaml.SequenceNode {
		p.errf(n, "want a list, got %s", yamlnode.Describe(n))
		return nil
	}
	return n.Content
}

// scalars reads a scalar or a list of scalars.
func (p *parser) scalars(n *yaml.Node) []*yaml.Node {
	if n.Kind == yaml.ScalarNode {
		return []*yaml.Node{n}
	}
	var out []*yaml.Node
	for _, c := range p.sequence(n) {
		if c.Kind != yaml.ScalarNode {
			p.errf(c, "want a value, got %s", yamlnode.Describe(c))
			continue
		}
		out = append(out, c)
	}
	return out
}

func (p *parser) str(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errf(n, "want a string, got %s", yamlnode.Describe(n))
		return ""
	}
	return n.Value
}

func (p *parser) number(n *yaml.Node, what string, min float64) float64 {
	var v float64
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
		p.errf(n, "%s: want a number, got %s", what, yamlnode.Describe(n))
		return 0
	}
	if err := n.Decode(&v); err != nil {
		p.errf(n, "%s: %v", what, err)
		return 0
	}
	if !(v >= min) {
		p.errf(n, "%s %v must be at least %v", what, n.Value, min)
	}
	return v
}

// duration reads a Prometheus duration ("30s", "5m", "1h30m", "1d");
// it must be positive unless zero is allowed.
func (p *parser) duration(n *yaml.Node, what string, zeroOK bool) time.Duration {
	s := p.str(n)
	if s == "" {
		return 0
	}
	d, err := model.ParseDuration(s)
	if err != nil {
		p.errf(n, "%s: bad duration %q (want e.g. 30s, 5m, 1h)", what, s)
		return 0
	}
	if d == 0 && !zeroOK {
		p.errf(n, "%s must be more than 0", what)
	}
	return time.Duration(d)
}

func (p *parser) stringMap(n *yaml.Node, what string) map[string]string {
	m := map[string]string{}
	if n.Kind != yaml.MappingNode {
		p.errf(n, "%s: want a mapping, got %s", what, yamlnode.Describe(n))
		return m
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if _, dup := m[k.Value]; dup {
			p.errf(k, "%s: %q given twice", what, k.Value)
		}
		m[k.Value] = p.str(v)
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (p *parser) group(n *yaml.Node) Group {
	g := Group{Interval: DefaultInterval, Pos: Pos{n.Line, n.Column}}
	var ruleNodes []*yaml.Node
	p.mapping(n, map[string]func(*yaml.Node){
		"name":     func(v *yaml.Node) { g.Name = p.str(v) },
		"interval": func(v *yaml.Node) { g.Interval = p.duration(v, "interval", false) },
		"rules":    func(v *yaml.Node) { ruleNodes = p.sequence(v) },
	}, "name", "rules")
	seen := map[string]bool{}
	for _, rn := range ruleNodes {
		r := p.rule(rn, g.Interval)
		if r.Alert != "" && seen[r.Alert] {
			p.ruleName = r.Alert
			p.errf(rn, "alert name defined twice in group %q", g.Name)
			p.ruleName = ""
		}
		seen[r.Alert] = true
		g.Rules = append(g.Rules, r)
	}
	return g
}
