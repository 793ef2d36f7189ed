package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/flowmon/flowmon/internal/yamlnode"
	"github.com/flowmon/flowmon/pipeline"
)

// A setting is one key of the file, a leaf: Parse, Set, Effective and
// Reloadable all work from the one table of them.
type setting struct {
	key    string                        // as the file spells it: "afpacket.block-size"
	field  func(c *Config) reflect.Value // the field it sets, addressable
	size   bool                          // an int of bytes: "1MiB" too
	path   bool                          // a path: made absolute, from the file's directory
	keep   []string                      // values of a path that are not paths ("none", "-")
	reload bool                          // a running agent takes a change (Reloadable)
	// seq is a sequence of mappings (watchlists.lists): the parser and
	// Set decode it element by element (lists.go).
	seq bool
}

// settings are the keys in the order Effective writes them.
var (
	settings []*setting
	byKey    map[string]*setting
	sections []string // the keys that hold mappings, in the file's order
	// aliases are the flags whose name is not their key's.
	aliases = map[string]string{"iface": "interface", "snapshot": "snapshot.path",
		"snapshot-interval": "snapshot.interval",
		"watchlist":         "watchlists.lists", "watchlist-dir": "watchlists.dir",
		"history-dir": "history.dir", "history-horizon": "history.horizon", "history-ram": "history.ram",
		"ipfix": "export.ipfix.collectors", "otlp": "export.otlp.endpoint", "web.config.file": "web.config-file"}
)

func init() {
	ptr := func(f func(c *Config) any) func(c *Config) reflect.Value {
		return func(c *Config) reflect.Value { return reflect.ValueOf(f(c)).Elem() }
	}
	add := func(s setting) { settings = append(settings, &s) }
	add(setting{key: "interface", field: ptr(func(c *Config) any { return &c.Interface })})
	add(setting{key: "source", field: ptr(func(c *Config) any { return &c.Source })})
	add(setting{key: "afpacket.block-size", field: ptr(func(c *Config) any { return &c.AFPacket.BlockSize }), size: true})
	add(setting{key: "afpacket.block-count", field: ptr(func(c *Config) any { return &c.AFPacket.BlockCount })})
	add(setting{key: "afpacket.frame-size", field: ptr(func(c *Config) any { return &c.AFPacket.FrameSize }), size: true})
	add(setting{key: "afpacket.block-timeout", field: ptr(func(c *Config) any { return &c.AFPacket.BlockTimeout })})
	add(setting{key: "afpacket.fanout", field: ptr(func(c *Config) any { return &c.AFPacket.Fanout })})
	add(setting{key: "afpacket.promisc", field: ptr(func(c *Config) any { return &c.AFPacket.Promisc })})
	add(setting{key: "afpacket.filter", field: ptr(func(c *Config) any { return &c.AFPacket.Filter })})
	add(setting{key: "pcap.snaplen", field: ptr(func(c *Config) any { return &c.Pcap.Snaplen })})
	add(setting{key: "pcap.promisc", field: ptr(func(c *Config) any { return &c.Pcap.Promisc })})
	add(setting{key: "pcap.filter", field: ptr(func(c *Config) any { return &c.Pcap.Filter })})
	add(setting{key: "pcap.timeout", field: ptr(func(c *Config) any { return &c.Pcap.Timeout })})
	add(setting{key: "ebpf.xdp-mode", field: ptr(func(c *Config) any { return &c.EBPF.XDPMode })})
	add(setting{key: "ebpf.tc-mode", field: ptr(func(c *Config) any { return &c.EBPF.TCMode })})
	add(setting{key: "ebpf.ring-size", field: ptr(func(c *Config) any { return &c.EBPF.RingSize }), size: true})
	add(setting{key: "ebpf.poll-timeout", field: ptr(func(c *Config) any { return &c.EBPF.PollTimeout })})
	add(setting{key: "ebpf.sample", field: ptr(func(c *Config) any { return &c.EBPF.Sample })})
	add(setting{key: "ebpf.cidrs", field: ptr(func(c *Config) any { return &c.EBPF.CIDRs })})
	add(setting{key: "ebpf.ports", field: ptr(func(c *Config) any { return &c.EBPF.Ports })})
	for _, f := range yamlnode.Fields(reflect.TypeFor[pipeline.Settings]()) {
		add(setting{key: "pipeline." + f.Key, field: func(c *Config) reflect.Value {
			return reflect.ValueOf(&c.Pipeline).Elem().Field(f.Index)
		}})
		aliases[f.Key] = "pipeline." + f.Key
	}
	add(setting{key: "rules", field: ptr(func(c *Config) any { return &c.Rules }), path: true, keep: []string{RulesNone}, reload: true})
	add(setting{key: "alerting", field: ptr(func(c *Config) any { return &c.Alerting }), path: true})
	add(setting{key: "watchlists.dir", field: ptr(func(c *Config) any { return &c.Watchlists.Dir }), path: true})
	add(setting{key: "watchlists.lists", field: ptr(func(c *Config) any { return &c.Watchlists.Lists }), seq: true, reload: true})
	add(setting{key: "history.dir", field: ptr(func(c *Config) any { return &c.History.Dir }), path: true})
	add(setting{key: "history.horizon", field: ptr(func(c *Config) any { return &c.History.Horizon })})
	add(setting{key: "history.ram", field: ptr(func(c *Config) any { return &c.History.RAM }), size: true})
	add(setting{key: "listen", field: ptr(func(c *Config) any { return &c.Listen })})
	add(setting{key: "web.config-file", field: ptr(func(c *Config) any { return &c.Web.ConfigFile }), path: true})
	add(setting{key: "web.enable-lifecycle", field: ptr(func(c *Config) any { return &c.Web.EnableLifecycle })})
	add(setting{key: "snapshot.path", field: ptr(func(c *Config) any { return &c.Snapshot.Path }), path: true})
	add(setting{key: "snapshot.max-age", field: ptr(func(c *Config) any { return &c.Snapshot.MaxAge })})
	add(setting{key: "snapshot.interval", field: ptr(func(c *Config) any { return &c.Snapshot.Interval })})
	add(setting{key: "flow-log", field: ptr(func(c *Config) any { return &c.FlowLog }), path: true, keep: []string{"-"}})
	add(setting{key: "flow-log-rotation.max-size", field: ptr(func(c *Config) any { return &c.FlowLogRotation.MaxSize }), size: true})
	add(setting{key: "flow-log-rotation.max-age", field: ptr(func(c *Config) any { return &c.FlowLogRotation.MaxAge })})
	add(setting{key: "flow-log-rotation.max-files", field: ptr(func(c *Config) any { return &c.FlowLogRotation.MaxFiles })})
	add(setting{key: "export.ipfix.collectors", field: ptr(func(c *Config) any { return &c.Export.IPFIX.Collectors })})
	add(setting{key: "export.ipfix.transport", field: ptr(func(c *Config) any { return &c.Export.IPFIX.Transport })})
	add(setting{key: "export.ipfix.mode", field: ptr(func(c *Config) any { return &c.Export.IPFIX.Mode })})
	add(setting{key: "export.ipfix.mtu", field: ptr(func(c *Config) any { return &c.Export.IPFIX.MTU })})
	add(setting{key: "export.ipfix.template-refresh", field: ptr(func(c *Config) any { return &c.Export.IPFIX.TemplateRefresh })})
	add(setting{key: "export.ipfix.enterprise-number", field: ptr(func(c *Config) any { return &c.Export.IPFIX.EnterpriseNumber })})
	add(setting{key: "export.ipfix.observation-domain", field: ptr(func(c *Config) any { return &c.Export.IPFIX.ObservationDomain })})
	add(setting{key: "export.ipfix.queue", field: ptr(func(c *Config) any { return &c.Export.IPFIX.Queue })})
	add(setting{key: "export.ipfix.rate", field: ptr(func(c *Config) any { return &c.Export.IPFIX.Rate })})
	add(setting{key: "export.otlp.endpoint", field: ptr(func(c *Config) any { return &c.Export.OTLP.Endpoint })})
	add(setting{key: "export.otlp.protocol", field: ptr(func(c *Config) any { return &c.Export.OTLP.Protocol })})
	add(setting{key: "export.otlp.headers-file", field: ptr(func(c *Config) any { return &c.Export.OTLP.HeadersFile }), path: true})
	add(setting{key: "export.otlp.ca-file", field: ptr(func(c *Config) any { return &c.Export.OTLP.CAFile }), path: true})
	add(setting{key: "export.otlp.cert-file", field: ptr(func(c *Config) any { return &c.Export.OTLP.CertFile }), path: true})
	add(setting{key: "export.otlp.key-file", field: ptr(func(c *Config) any { return &c.Export.OTLP.KeyFile }), path: true})
	add(setting{key: "export.otlp.insecure-skip-verify", field: ptr(func(c *Config) any { return &c.Export.OTLP.InsecureSkipVerify })})
	add(setting{key: "export.otlp.body", field: ptr(func(c *Config) any { return &c.Export.OTLP.Body })})
	add(setting{key: "export.otlp.compression", field: ptr(func(c *Config) any { return &c.Export.OTLP.Compression })})
	add(setting{key: "export.otlp.batch-size", field: ptr(func(c *Config) any { return &c.Export.OTLP.BatchSize })})
	add(setting{key: "export.otlp.batch-timeout", field: ptr(func(c *Config) any { return &c.Export.OTLP.BatchTimeout })})
	add(setting{key: "export.otlp.queue", field: ptr(func(c *Config) any { return &c.Export.OTLP.Queue })})
	add(setting{key: "export.otlp.timeout", field: ptr(func(c *Config) any { return &c.Export.OTLP.Timeout })})
	add(setting{key: "user", field: ptr(func(c *Config) any { return &c.User })})
	add(setting{key: "stop-timeout", field: ptr(func(c *Config) any { return &c.StopTimeout })})
	add(setting{key: "health.max-drop-share", field: ptr(func(c *Config) any { return &c.Health.MaxDropShare })})
	add(setting{key: "log-format", field: ptr(func(c *Config) any { return &c.LogFormat })})
	byKey = make(map[string]*setting, len(settings))
	for _, s := range settings {
		byKey[s.key] = s
		// every enclosing mapping is a section: export and export.ipfix
		for i := range len(s.key) {
			if s.key[i] == '.' && !slices.Contains(sections, s.key[:i]) {
				sections = append(sections, s.key[:i])
			}
		}
	}
}

// set decodes v into the setting's field of c; a relative path is taken
// from dir. It returns what is wrong with v's form, or "".
func (s *setting) set(c *Config, v *yaml.Node, dir string) string {
	f := s.field(c)
	if msg := decode(f, v, s.size); msg != "" {
		return msg
	}
	if p := f.String(); s.path && p != "" && !slices.Contains(s.keep, p) {
		f.SetString(absPath(dir, p))
	}
	return ""
}

// absPath is p, if relative taken from dir (itself from the working
// directory), made absolute so that it means the same wherever the
// configuration is read back (Effective) and whatever the agent's
// working directory.
func absPath(dir, p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}

// IsBool reports whether the setting a flag of this name sets (as Set
// names them) is true or false: such a flag may be given without a
// value (--web.enable-lifecycle).
func IsBool(name string) bool {
	key := name
	if k, ok := aliases[name]; ok {
		key = k
	}
	s := byKey[key]
	return s != nil && !s.seq && s.field(&Config{}).Kind() == reflect.Bool
}

// setFlag sets the setting from a flag's value; it returns what is
// wrong with the value's form, or "".
func (s *setting) setFlag(c *Config, value string) string {
	if s.seq {
		return c.setWatchlist(value)
	}
	v := &yaml.Node{Kind: yaml.ScalarNode, Value: value}
	v.Tag = v.ShortTag()
	if s.field(c).Kind() == reflect.String {
		v.Tag = "!!str" // a flag's string is the string, even "true" or ""
	}
	return s.set(c, v, "")
}

// Set applies a flag to c after loading, as its key in the file would:
// name is the flag's name without dashes, one of iface, snapshot (for
// snapshot.path), watchlist-dir, history-dir, history-horizon,
// history-ram (watchlists.dir, history.dir, ...), web.config.file
// (web.config-file, as Prometheus names its flag), a top-level key
// (source, listen, user, rules, alerting, flow-log, stop-timeout,
// interface), a pipeline key without "pipeline." (workers, backend,
// ...), or any key as the file spells it ("afpacket.block-size"). value
// is read as the file's value would be (sizes such as 1MiB, durations,
// true/false), a relative path from the working directory. watchlist
// (watchlists.lists) takes NAME=FILE, once a flag: NAME's file, the
// list added if the file has none of that name. The setting is checked with the rest of c, and the
// errors name the flag ("--workers: 0 must be between 1 and 256");
// c is unchanged on error.
func (c *Config) Set(name, value string) error {
	key := name
	if k, ok := aliases[name]; ok {
		key = k
	}
	s := byKey[key]
	if s == nil {
		return fmt.Errorf("config: no setting %q", name)
	}
	flag := "--" + name
	next := *c
	if msg := s.setFlag(&next, value); msg != "" {
		return invalid(flag, msg)
	}
	if key == "pipeline.profile" {
		// A flag's profile goes under what the file or an earlier flag
		// set: it changes only the settings still at their defaults.
		def := runSettings()
		dv, nv := reflect.ValueOf(&def).Elem(), reflect.ValueOf(&next.Pipeline).Elem()
		next.Pipeline.ApplyProfile(func(name string) bool {
			return !reflect.DeepEqual(yamlnode.FieldByKey(dv, name).Interface(), yamlnode.FieldByKey(nv, name).Interface())
		})
	}
	var errs []error
	for _, p := range next.check(func(k string) bool { return k == key }) {
		k := p.key
		if k == key || strings.HasPrefix(k, key+"[") { // a list's element
			k = flag
		}
		errs = append(errs, invalid(k, p.msg))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	*c = next
	return nil
}
