package config

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/flowmon/flowmon/capture"
)

// Effective writes c as the configuration file that gives it: every key
// with its value, in the order of the package doc, which Parse reads back
// to c (its paths are absolute already). A pipeline setting that does
// nothing with the others (kbf-encoder with a backend other than kbf) is
// written commented out, with the reason, since giving it is an error;
// the empty values that mean something say what in a comment. An
// invalid c is Validate's error.
func (c Config) Effective() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	inert := make(map[string]string) // key -> why it does nothing
	for _, p := range checkPipeline(&c.Pipeline, func(string) bool { return true }) {
		inert[p.key] = p.want
	}
	var b bytes.Buffer
	var open []string // the sections written last, outermost first
	for _, s := range settings {
		parts := strings.Split(s.key, ".")
		name, secs := parts[len(parts)-1], parts[:len(parts)-1]
		indent := strings.Repeat("  ", len(secs))
		same := 0
		for same < len(secs) && same < len(open) && secs[same] == open[same] {
			same++
		}
		for d := same; d < len(secs); d++ {
			sec := strings.Join(secs[:d+1], ".")
			b.WriteString(strings.Repeat("  ", d) + secs[d] + ":")
			if n := sectionNote(&c, sec); n != "" {
				b.WriteString("  # " + n)
			}
			b.WriteByte('\n')
		}
		open = secs
		v := s.field(&c)
		text, err := keyValue(name, encode(v, s.size))
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", s.key, err)
		}
		if why, ok := inert[s.key]; ok {
			fmt.Fprintf(&b, "%s# %s  # %s\n", indent, strings.TrimSuffix(text, "\n"), why)
			continue
		}
		if n := note(s.key, v); n != "" {
			text = strings.TrimSuffix(text, "\n") + "  # " + n + "\n"
		}
		for _, line := range strings.SplitAfter(text, "\n") {
			if line != "" {
				b.WriteString(indent + line)
			}
		}
	}
	return b.Bytes(), nil
}

// encode makes the YAML scalar of a field, as decode reads it.
func encode(f reflect.Value, size bool) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode}
	switch {
	case f.Type() == watchlistsType:
		return encodeLists(f.Interface().([]Watchlist))
	case f.Type() == stringsType:
		l := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
		for _, s := range f.Interface().([]string) {
			l.Content = append(l.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s})
		}
		return l
	case f.Type() == durationType:
		n.Value = formatDuration(durationOf(f))
	case f.Kind() == reflect.String:
		n.Tag, n.Value = "!!str", f.String()
	case f.Kind() == reflect.Bool:
		n.Value = strconv.FormatBool(f.Bool())
	case f.Kind() == reflect.Int && size && f.Int()%(1<<20) == 0:
		n.Value = capture.FormatSize(f.Int()) // 1MiB; smaller sizes in bytes
	case f.Kind() == reflect.Int || f.Kind() == reflect.Int64:
		n.Value = strconv.FormatInt(f.Int(), 10)
	case f.Kind() == reflect.Float64:
		n.Value = strconv.FormatFloat(f.Float(), 'g', -1, 64)
	default:
		panic(fmt.Sprintf("config: no encoder for a field of type %v", f.Type()))
	}
	if n.Tag == "" {
		n.Tag = n.ShortTag()
	}
	return n
}

// keyValue writes the one-key mapping name: v, a block scalar's lines
// indented under it.
func keyValue(name string, v *yaml.Node) (string, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}
	if err := enc.Encode(&yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{k, v}}); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	return b.String(), nil
}

// note says what an empty or zero value means, for the keys where it
// means something.
func note(key string, v reflect.Value) string {
	if !v.IsZero() {
		return ""
	}
	switch key {
	case "interface":
		return "none yet: flowmon run --iface gives it"
	case "afpacket.filter", "pcap.filter", "ebpf.cidrs", "ebpf.ports":
		return "every packet"
	case "rules":
		return "the embedded default rules (flowmon rules show)"
	case "alerting":
		return "no alert sinks file"
	case "watchlists.dir":
		return "in memory: each start builds the lists from their files"
	case "watchlists.lists":
		return "none"
	case "history.dir":
		return "no flow history: novelty rules never fire"
	case "history.horizon":
		return "for ever"
	case "web.config-file":
		return "plain HTTP, no auth: listen only on loopback"
	case "web.enable-lifecycle":
		return "POST /-/reload and the watchlists' POST answer 403"
	case "snapshot.path":
		return "no snapshot"
	case "flow-log":
		return "no flow log"
	case "flow-log-rotation.max-size", "flow-log-rotation.max-age":
		return "no limit"
	case "export.ipfix.collectors":
		return "none: no IPFIX export"
	case "export.ipfix.enterprise-number":
		return "none: no enterprise elements"
	case "export.otlp.endpoint":
		return "none: no OTLP export"
	case "export.otlp.headers-file":
		return "none: no headers"
	case "export.otlp.ca-file":
		return "the system's CAs"
	case "user":
		return "stays the user it starts as"
	}
	return ""
}

// sectionNote says that a capture source's section is not the one used.
func sectionNote(c *Config, sec string) string {
	if (sec == SourceAFPacket || sec == SourcePcap) && sec != c.Source {
		return "not used: source is " + c.Source
	}
	if sec == "ebpf" && c.Source != SourceXDP && c.Source != SourceTC {
		return "not used: source is " + c.Source
	}
	return ""
}
