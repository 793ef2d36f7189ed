package config

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/flowmon/flowmon/conferr"
	"github.com/flowmon/flowmon/internal/yamlnode"
)

// Load reads and parses the configuration file at path; "" is no file,
// and gives Default().
func Load(path string) (Config, error) {
	if path == "" {
		return Default(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes a configuration file's content strictly: an unknown or
// repeated key, a value of the wrong type, a bad duration, size, address
// or choice, a number out of its range, a pipeline setting that does
// nothing with the others, are errors, all of the file's reported at
// once as conferr.Errors, in the file's order, each
// "name:line:col: key: what is wrong". Keys not given take Default's
// values; an empty file is Default(). Relative paths (rules, alerting,
// snapshot.path, flow-log) are taken from name's directory, as
// Prometheus does, and made absolute.
func Parse(name string, data []byte) (Config, error) {
	p := &parser{file: name, dir: filepath.Dir(name), at: map[string]*yaml.Node{}, bad: map[string]bool{}}
	c := Default()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err == io.EOF {
		return c, nil
	} else if err != nil {
		return Config{}, p.syntaxError(err, data)
	}
	var more yaml.Node
	if err := dec.Decode(&more); err != io.EOF {
		if err != nil {
			return Config{}, p.syntaxError(err, data)
		}
		p.errorf(&more, "", "a second YAML document: the configuration is one mapping")
		return Config{}, p.err()
	}
	if len(doc.Content) == 0 {
		return c, nil
	}
	root := yamlnode.Resolve(doc.Content[0])
	if root.Tag == "!!null" {
		return c, nil
	}
	p.root = root
	p.mapping(root, "", &c)
	given := func(key string) bool { return p.at[key] != nil }
	c.Pipeline.ApplyProfile(func(name string) bool { return given("pipeline." + name) })
	for _, pr := range c.check(given) {
		if p.bad[pr.key] {
			continue // its value was malformed, and said so
		}
		p.errorf(p.near(pr.key), pr.key, "%s", pr.msg)
	}
	if err := p.err(); err != nil {
		return Config{}, err
	}
	return c, nil
}

type parser struct {
	file string
	dir  string
	root *yaml.Node
	at   map[string]*yaml.Node // key or section -> its value, as given
	bad  map[string]bool       // keys whose value was malformed
	errs []*conferr.Error
}

func (p *parser) errorf(n *yaml.Node, key, format string, args ...any) {
	p.errs = append(p.errs, &conferr.Error{File: p.file, Line: n.Line, Col: n.Column, Key: key, Msg: fmt.Sprintf(format, args...), Err: ErrInvalid})
}

// err joins the errors in the file's order.
func (p *parser) err() error { return conferr.Join(p.errs) }

// near is where to point for a problem of key: its value if given, else
// its section's, else the file's start.
func (p *parser) near(key string) *yaml.Node {
	for k := key; ; {
		if n := p.at[k]; n != nil {
			return n
		}
		i := strings.LastIndexByte(k, '.')
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return p.root
}

// syntaxError turns yaml.v3's syntax error in data into an error at the
// line it means.
func (p *parser) syntaxError(err error, data []byte) error {
	e := &conferr.Error{File: p.file, Err: ErrInvalid}
	e.Line, e.Msg = yamlnode.SyntaxError(err, yamlnode.Lines(data))
	return conferr.Join([]*conferr.Error{e})
}

// mapping decodes the keys of n, whose keys are prefix (a section and a
// dot, or "") and its own.
func (p *parser) mapping(n *yaml.Node, prefix string, c *Config) {
	section := strings.TrimSuffix(prefix, ".")
	if n.Kind != yaml.MappingNode {
		what := "a mapping of settings"
		if section == "" {
			what = "a mapping of settings (interface, source, pipeline, ...)"
		}
		p.errorf(n, section, "want %s, got %s", what, yamlnode.Describe(n))
		p.bad[section] = true
		return
	}
	seen := make(map[string]int) // key -> line
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], yamlnode.Resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			p.errorf(k, section, "want a key, got %s", yamlnode.Describe(k))
			continue
		}
		key := prefix + k.Value
		if line, ok := seen[k.Value]; ok {
			p.errorf(k, key, "already set at line %d", line)
			continue
		}
		seen[k.Value] = k.Line
		switch s := byKey[key]; {
		case s != nil && s.seq:
			p.at[key] = v
			p.lists(key, v, c)
		case s != nil:
			p.at[key] = v
			if msg := s.set(c, v, p.dir); msg != "" {
				p.errorf(v, key, "%s", msg)
				p.bad[key] = true
			}
		case slices.Contains(sections, key):
			p.at[key] = v
			if v.Tag != "!!null" { // an empty section is all defaults
				p.mapping(v, key+".", c)
			}
		default:
			p.errorf(k, section, "unknown key %q (want one of %s)", k.Value, strings.Join(keysOf(prefix), ", "))
		}
	}
}

// keysOf lists the keys a mapping with prefix holds: its settings and
// its sections.
func keysOf(prefix string) []string {
	var out []string
	for _, s := range settings {
		rest, ok := strings.CutPrefix(s.key, prefix)
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(rest, ".")
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}
