package alerts

import (
	"fmt"
	"path/filepath"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/flowmon/flowmon/conferr"
	"github.com/flowmon/flowmon/internal/yamlnode"
)

// ParseConfig decodes a sinks file (see the package doc) strictly: an
// unknown or repeated key, a key of another sink type, a value of the
// wrong type, a bad duration or size, a broken rule or a name used twice
// are errors, all reported at once as conferr.Errors in the file's order,
// each naming file:line:col and the sink. The result has its defaults
// filled. Relative paths (path, ca_file, bearer_token_file) are taken
// from name's directory, as Prometheus does.
func ParseConfig(name string, data []byte) (Config, error) {
	p := &parser{file: name}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Config{}, p.syntaxError(err, data)
	}
	var c Config
	if len(doc.Content) == 0 {
		return c, nil // empty: no sinks
	}
	root := yamlnode.Resolve(doc.Content[0])
	if root.Tag == "!!null" {
		return c, nil
	}
	if root.Kind != yaml.MappingNode {
		p.errorf(root, "", "want a mapping with a sinks key, got %s", yamlnode.Describe(root))
		return Config{}, p.err()
	}
	p.mapping(root, "", func(key string, k, v *yaml.Node) bool {
		if key != "sinks" {
			return false
		}
		if v.Tag == "!!null" {
			return true
		}
		if v.Kind != yaml.SequenceNode {
			p.errorf(v, "", "sinks: want a list of sinks, got %s", yamlnode.Describe(v))
			return true
		}
		firstAt := make(map[string]int) // name -> line
		for i, item := range v.Content {
			sc := p.sink(yamlnode.Resolve(item), i)
			if sc.Name != "" {
				if line, ok := firstAt[sc.Name]; ok {
					p.errorf(p.nameNode, sinkID(sc.Name, i), "name %q already used by the sink at line %d", sc.Name, line)
				} else {
					firstAt[sc.Name] = p.nameNode.Line
				}
			}
			c.Sinks = append(c.Sinks, sc)
		}
		return true
	})
	if err := p.err(); err != nil {
		return Config{}, err
	}
	return c, nil
}

type parser struct {
	file     string
	errs     []*conferr.Error
	nameNode *yaml.Node // of the sink just parsed
}

func (p *parser) errorf(n *yaml.Node, sink, format string, args ...any) {
	p.errs = append(p.errs, &conferr.Error{File: p.file, Line: n.Line, Col: n.Column, In: sinkIn(sink), Msg: fmt.Sprintf(format, args...), Err: ErrInvalid})
}

// err joins the errors in the file's order.
func (p *parser) err() error { return conferr.Join(p.errs) }

// syntaxError turns yaml.v3's syntax error in data into an error at the
// line it means.
func (p *parser) syntaxError(err error, data []byte) error {
	line, msg := yamlnode.SyntaxError(err, yamlnode.Lines(data))
	return conferr.Join([]*conferr.Error{{File: p.file, Line: line, Msg: msg, Err: ErrInvalid}})
}

// mapping calls f for each key of n, in order; f reports whether it knew
// the key. Unknown and repeated keys are errors of sink.
func (p *parser) mapping(n *yaml.Node, sink string, f func(key string, k, v *yaml.Node) bool) {
	seen := make(map[string]int)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], yamlnode.Resolve(n.Content[i+1])
		if line, ok := seen[k.Value]; ok {
			p.errorf(k, sink, "%s: already set at line %d", k.Value, line)
			continue
		}
		seen[k.Value] = k.Line
		if !f(k.Value, k, v) {
			p.errorf(k, sink, "unknown field %q", k.Value)
		}
	}
}

// sinkField is one key of a sink: the types it belongs to (nil: all) and
// how its value is set.
type sinkField struct {
	types []SinkType
	set   func(p *parser, c *SinkConfig, v *yaml.Node) string // what is wrong, or ""
}

var (
	httpTypes  = []SinkType{SinkWebhook, SinkAlertmanager}
	sinkFields map[string]sinkField
)

func init() {
	sinkFields = map[string]sinkField{
		"name":              {nil, func(p *parser, c *SinkConfig, v *yaml.Node) string { return str(v, &c.Name) }},
		"type":              {nil, func(p *parser, c *SinkConfig, v *yaml.Node) string { return str(v, (*string)(&c.Type)) }},
		"queue":             {nil, func(p *parser, c *SinkConfig, v *yaml.Node) string { return positive(v, &c.Queue) }},
		"min_backoff":       {nil, func(p *parser, c *SinkConfig, v *yaml.Node) string { return duration(v, &c.MinBackoff) }},
		"max_backoff":       {nil, func(p *parser, c *SinkConfig, v *yaml.Node) string { return duration(v, &c.MaxBackoff) }},
		"format":            {[]SinkType{SinkStdout, SinkFile}, setFormat},
		"path":              {[]SinkType{SinkFile}, func(p *parser, c *SinkConfig, v *yaml.Node) string { return p.path(v, &c.Path) }},
		"max_size":          {[]SinkType{SinkFile}, func(p *parser, c *SinkConfig, v *yaml.Node) string { return size(v, &c.MaxSize) }},
		"max_files":         {[]SinkType{SinkFile}, func(p *parser, c *SinkConfig, v *yaml.Node) string { return positive(v, &c.MaxFiles) }},
		"max_age":           {[]SinkType{SinkFile}, func(p *parser, c *SinkConfig, v *yaml.Node) string { return duration(v, &c.MaxAge) }},
		"url":               {[]SinkType{SinkWebhook}, func(p *parser, c *SinkConfig, v *yaml.Node) string { return str(v, &c.URL) }},
		"urls":              {[]SinkType{SinkAlertmanager}, setURLs},
		"bearer_token":      {httpTypes, func(p *parser, c *SinkConfig, v *yaml.Node) string { return str(v, &c.BearerToken) }},
		"bearer_token_file": {httpTypes, func(p *parser, c *SinkConfig, v *yaml.Node) string { return p.path(v, &c.BearerTokenFile) }},
		"tls":               {httpTypes, nil}, // a mapping: parser.tls
		"timeout":           {httpTypes, func(p *parser, c *SinkConfig, v *yaml.Node) string { return duration(v, &c.Timeout) }},
		"resend_interval":   {[]SinkType{SinkAlertmanager}, func(p *parser, c *SinkConfig, v *yaml.Node) string { return duration(v, &c.ResendInterval) }},
		"max_firing":        {[]SinkType{SinkAlertmanager}, func(p *parser, c *SinkConfig, v *yaml.Node) string { return positive(v, &c.MaxFiring) }},
		"generator_url":     {[]SinkType{SinkAlertmanager}, func(p *parser, c *SinkConfig, v *yaml.Node) string { return str(v, &c.GeneratorURL) }},
	}
}

// sink decodes the i-th sink (from 0), reports its problems, and returns
// it with its defaults.
func (p *parser) sink(n *yaml.Node, i int) SinkConfig {
	var c SinkConfig
	p.nameNode = n
	if n.Kind != yaml.MappingNode {
		p.errorf(n, sinkID("", i), "want a mapping, got %s", yamlnode.Describe(n))
		return c
	}
	// The name and type first, for every other error to name the sink and
	// to know which keys belong.
	at := make(map[string]*yaml.Node) // key -> its value
	for j := 0; j+1 < len(n.Content); j += 2 {
		if k := n.Content[j]; at[k.Value] == nil {
			at[k.Value] = yamlnode.Resolve(n.Content[j+1])
		}
	}
	if v := at["name"]; v != nil && v.Kind == yaml.ScalarNode {
		c.Name = v.Value
		p.nameNode = v
	}
	id := sinkID(c.Name, i)
	if v := at["type"]; v != nil && v.Kind == yaml.ScalarNode {
		c.Type = SinkType(v.Value)
	}
	bad := make(map[string]bool) // keys whose value was malformed
	known := c.Type == SinkStdout || c.Type == SinkFile || c.Type == SinkWebhook || c.Type == SinkAlertmanager
	p.mapping(n, id, func(key string, k, v *yaml.Node) bool {
		f, ok := sinkFields[key]
		if !ok {
			return false
		}
		if known && f.types != nil && !containsType(f.types, c.Type) {
			p.errorf(k, id, "%s: not a setting of type %s", key, c.Type)
			return true
		}
		if key == "tls" {
			bad[key] = !p.tls(v, id, &c.TLS)
		} else if msg := f.set(p, &c, v); msg != "" {
			p.errorf(v, id, "%s: %s", key, msg)
			bad[key] = true
		}
		return true
	})
	c = c.WithDefaults()
	for _, pr := range c.check() {
		// At the key's value if there is one, else at the sink; not again
		// for a value already reported as malformed.
		if v := at[pr.field]; v == nil {
			p.errorf(n, id, "%s", pr.msg)
		} else if !bad[pr.field] {
			p.errorf(v, id, "%s", pr.msg)
		}
	}
	return c
}

func containsType(ts []SinkType, t SinkType) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// tls decodes a tls mapping, reporting whether it was well formed.
func (p *parser) tls(v *yaml.Node, id string, t *TLSConfig) bool {
	if v.Kind != yaml.MappingNode {
		p.errorf(v, id, "tls: want a mapping, got %s", yamlnode.Describe(v))
		return false
	}
	n := len(p.errs)
	p.mapping(v, id, func(key string, k, v *yaml.Node) bool {
		var msg string
		switch key {
		case "ca_file":
			msg = p.path(v, &t.CAFile)
		case "insecure_skip_verify":
			msg = boolean(v, &t.InsecureSkipVerify)
		default:
			return false
		}
		if msg != "" {
			p.errorf(v, id, "tls: %s: %s", key, msg)
		}
		return true
	})
	return len(p.errs) == n
}

// The setters return what is wrong with the value, or "".

func str(v *yaml.Node, dst *string) string {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		return "want a string, got " + yamlnode.Describe(v)
	}
	*dst = v.Value
	return ""
}

// path is a string, relative to the configuration file's directory.
func (p *parser) path(v *yaml.Node, dst *string) string {
	if msg := str(v, dst); msg != "" {
		return msg
	}
	if *dst != "" && !filepath.IsAbs(*dst) && p.file != "" {
		*dst = filepath.Join(filepath.Dir(p.file), *dst)
	}
	return ""
}

func positive(v *yaml.Node, dst *int) string {
	var n int
	if v.Kind != yaml.ScalarNode || v.Tag != "!!int" || v.Decode(&n) != nil {
		return "want an integer, got " + yamlnode.Describe(v)
	}
	if n <= 0 {
		return fmt.Sprintf("%d must be > 0", n)
	}
	*dst = n
	return ""
}

func boolean(v *yaml.Node, dst *bool) string {
	if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" || v.Decode(dst) != nil {
		return "want true or false, got " + yamlnode.Describe(v)
	}
	return ""
}

func duration(v *yaml.Node, dst *time.Duration) string {
	if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
		return "want a duration such as 5s or 1m30s, got " + yamlnode.Describe(v)
	}
	d, err := time.ParseDuration(v.Value)
	if err != nil {
		return fmt.Sprintf("bad duration %q (want e.g. 5s or 1m30s)", v.Value)
	}
	if d <= 0 {
		return fmt.Sprintf("%s must be > 0", v.Value)
	}
	*dst = d
	return ""
}

func setFormat(_ *parser, c *SinkConfig, v *yaml.Node) string {
	var s string
	if msg := str(v, &s); msg != "" {
		return msg
	}
	f, err := ParseFormat(s)
	if err != nil {
		return err.Error()
	}
	c.Format = f
	return ""
}

func setURLs(_ *parser, c *SinkConfig, v *yaml.Node) string {
	if v.Kind != yaml.SequenceNode {
		return "want a list of URLs, got " + yamlnode.Describe(v)
	}
	c.URLs = c.URLs[:0]
	for _, item := range v.Content {
		var u string
		if msg := str(yamlnode.Resolve(item), &u); msg != "" {
			return msg
		}
		c.URLs = append(c.URLs, u)
	}
	return ""
}

// size reads a byte count: an integer, or a number with a unit, decimal
// (kB, MB, GB, TB) or binary (KiB, MiB, GiB, TiB); B is bytes.
func size(v *yaml.Node, dst *int64) string {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!int" {
		if v.Decode(dst) != nil || *dst < 0 {
			return fmt.Sprintf("bad size %s (want bytes >= 0, or e.g. 10MiB)", v.Value)
		}
		return ""
	}
	if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
		return "want a size such as 10MiB, got " + yamlnode.Describe(v)
	}
	n, err := yamlnode.ParseSize(v.Value)
	if err != nil {
		return err.Error()
	}
	*dst = n
	return ""
}
