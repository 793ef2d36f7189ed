package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/capture/afpacket"
	"github.com/flowmon/flowmon/conferr"
	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/record/ipfix"
)

// A problem is one broken rule, and the key it is about.
type problem struct {
	key, msg string
	want     string // of a pipeline setting: what it may be, without its value
}

// Validate checks c as Parse and Set do, and returns every problem, each
// a *conferr.Error naming its key, joined (errors.Join). It cannot say
// that a setting does nothing with the others (pipeline.kbf-encoder with
// another backend): only Parse and Set know what the operator gave.
func (c Config) Validate() error {
	var errs []error
	for _, p := range c.check(nil) {
		errs = append(errs, invalid(p.key, p.msg))
	}
	return errors.Join(errs...)
}

// check returns what is wrong with c. given reports whether the operator
// gave a key (nil: unknown), for the pipeline's settings that do nothing
// with the others.
func (c *Config) check(given func(key string) bool) []problem {
	var ps []problem
	add := func(key, format string, args ...any) {
		ps = append(ps, problem{key: key, msg: fmt.Sprintf(format, args...)})
	}
	if c.Interface != "" && !ifaceName(c.Interface) {
		add("interface", "%q is not an interface name (1 to %d bytes, not . or .., without '/', ':' or spaces)", c.Interface, capture.MaxIfaceName)
	}
	switch c.Source {
	case SourceAFPacket, SourcePcap, SourceXDP, SourceTC:
	default:
		add("source", "%q must be %s, %s, %s or %s", c.Source, SourceAFPacket, SourcePcap, SourceXDP, SourceTC)
	}

	ps = append(ps, checkAFPacket(&c.AFPacket)...)
	if msg := checkFilter(c.AFPacket.Filter); msg != "" {
		add("afpacket.filter", "%s", msg)
	}

	if n := c.Pcap.Snaplen; n < capture.MinSnaplen || n > capture.MaxSnaplen {
		add("pcap.snaplen", "%d must be between %d and %d", n, capture.MinSnaplen, capture.MaxSnaplen)
	}
	if msg := checkFilter(c.Pcap.Filter); msg != "" {
		add("pcap.filter", "%s", msg)
	}
	if t := c.Pcap.Timeout; t < capture.MinReadTimeout || t > capture.MaxReadTimeout {
		add("pcap.timeout", "%s must be between %s and %s", formatDuration(t), formatDuration(capture.MinReadTimeout), formatDuration(capture.MaxReadTimeout))
	}

	ps = append(ps, checkEBPF(&c.EBPF)...)

	ps = append(ps, checkPipeline(&c.Pipeline, given)...)
	if c.Pipeline.FlowState == pipeline.FlowStateKernel {
		if c.Source != SourceXDP && c.Source != SourceTC {
			add("pipeline.flow-state", "kernel needs source %s or %s (the eBPF programs keep the flows at the hook), not %s", SourceXDP, SourceTC, c.Source)
		}
		if c.EBPF.Sample > 1 {
			add("ebpf.sample", "%d does not work with pipeline.flow-state kernel: the kernel keeps every flow", c.EBPF.Sample)
		}
		if c.EBPF.CIDRs != "" {
			add("ebpf.cidrs", "the pre-filter does not work with pipeline.flow-state kernel: the kernel keeps every flow")
		}
		if c.EBPF.Ports != "" {
			add("ebpf.ports", "the pre-filter does not work with pipeline.flow-state kernel: the kernel keeps every flow")
		}
	}

	ps = append(ps, checkWatchlists(c.Watchlists.Lists)...)
	if t := c.History.Horizon; t < 0 {
		add("history.horizon", "%s must be 0 (for ever) or more", formatDuration(t))
	}
	if n := c.History.RAM; n < MinHistoryRAM || int64(n) > MaxHistoryRAM {
		add("history.ram", "%s must be between %s and %s", capture.FormatSize(int64(n)), capture.FormatSize(MinHistoryRAM), capture.FormatSize(MaxHistoryRAM))
	}

	if msg := checkListen(c.Listen); msg != "" {
		add("listen", "%s", msg)
	}
	if t := c.Snapshot.MaxAge; t < MinMaxAge || t > MaxMaxAge {
		add("snapshot.max-age", "%s must be between %s and %s", formatDuration(t), formatDuration(MinMaxAge), formatDuration(MaxMaxAge))
	}
	if t, age := c.Snapshot.Interval, c.Snapshot.MaxAge; t != 0 && age >= MinMaxAge && (t < MinSnapshotInterval || t > age) {
		add("snapshot.interval", "%s must be 0 (only at the stop) or between %s and snapshot.max-age (%s), or the snapshot a crash leaves is refused as stale",
			formatDuration(t), formatDuration(MinSnapshotInterval), formatDuration(c.Snapshot.MaxAge))
	}
	if r := c.FlowLogRotation; r.MaxSize != 0 && (r.MaxSize < MinRotateSize || int64(r.MaxSize) > MaxRotateSize) {
		add("flow-log-rotation.max-size", "%s must be 0 (no limit) or between %s and %s", capture.FormatSize(int64(r.MaxSize)), capture.FormatSize(MinRotateSize), capture.FormatSize(MaxRotateSize))
	}
	if t := c.FlowLogRotation.MaxAge; t != 0 && t < MinRotateAge {
		add("flow-log-rotation.max-age", "%s must be 0 (no limit) or at least %s", formatDuration(t), formatDuration(MinRotateAge))
	}
	if n := c.FlowLogRotation.MaxFiles; n < 1 || n > MaxRotateFiles {
		add("flow-log-rotation.max-files", "%d must be between 1 and %d", n, MaxRotateFiles)
	}
	if c.User != "" && !userName(c.User) {
		add("user", "%q is not a user name or uid (1 to %d letters, digits, '_', '-' or '.', not starting with '-')", c.User, MaxUserName)
	}
	if s := c.Health.MaxDropShare; !(s > 0 && s <= 1) {
		add("health.max-drop-share", "%v must be above 0 and at most 1 (never)", s)
	}
	if t := c.StopTimeout; t < MinStopTimeout || t > MaxStopTimeout {
		add("stop-timeout", "%s must be between %s and %s", formatDuration(t), formatDuration(MinStopTimeout), formatDuration(MaxStopTimeout))
	}
	if f := c.LogFormat; f != LogText && f != LogJSON {
		add("log-format", "%q must be %s or %s", f, LogText, LogJSON)
	}
	ps = append(ps, checkIPFIX(&c.Export.IPFIX)...)
	for _, p := range c.Export.OTLP.Options().Problems() {
		// Checked with no endpoint too, as export.ipfix's keys are.
		ps = append(ps, problem{key: "export.otlp." + p.Key, msg: p.Msg})
	}
	return ps
}

// checkIPFIX checks export.ipfix. Its keys are checked with no
// collector too (Effective writes them all), so that adding one later
// meets no surprise.
func checkIPFIX(x *IPFIX) []problem {
	var ps []problem
	add := func(key, format string, args ...any) {
		ps = append(ps, problem{key: "export.ipfix." + key, msg: fmt.Sprintf(format, args...)})
	}
	if len(x.Collectors) > ipfix.MaxCollectors {
		add("collectors", "%d collectors: at most %d", len(x.Collectors), ipfix.MaxCollectors)
	}
	for i, col := range x.Collectors {
		if msg := ipfix.CheckCollector(col); msg != "" {
			add("collectors", "[%d]: %s", i, msg)
		}
	}
	if x.Transport != ipfix.TransportUDP && x.Transport != ipfix.TransportTCP {
		add("transport", "%q must be %s or %s", x.Transport, ipfix.TransportUDP, ipfix.TransportTCP)
	}
	if x.Mode != ipfix.ModeBiflow && x.Mode != ipfix.ModeCompat {
		add("mode", "%q must be %s or %s", x.Mode, ipfix.ModeBiflow, ipfix.ModeCompat)
	}
	if x.MTU < ipfix.MinMTU || x.MTU > ipfix.MaxMTU {
		add("mtu", "%d must be between %d and %d", x.MTU, ipfix.MinMTU, ipfix.MaxMTU)
	}
	if t := x.TemplateRefresh; t < ipfix.MinTemplateRefresh || t > ipfix.MaxTemplateRefresh {
		add("template-refresh", "%s must be between %s and %s", formatDuration(t), formatDuration(ipfix.MinTemplateRefresh), formatDuration(ipfix.MaxTemplateRefresh))
	}
	if n := x.EnterpriseNumber; n < 0 || n > math.MaxUint32 {
		add("enterprise-number", "%d must be between 0 (none) and %d", n, uint32(math.MaxUint32))
	}
	if n := x.ObservationDomain; n < 0 || n > math.MaxUint32 {
		add("observation-domain", "%d must be between 0 and %d", n, uint32(math.MaxUint32))
	}
	if x.Queue < ipfix.MinQueue || x.Queue > ipfix.MaxQueue {
		add("queue", "%d must be between %d and %d records", x.Queue, ipfix.MinQueue, ipfix.MaxQueue)
	}
	if x.Rate < ipfix.MinRate || x.Rate > ipfix.MaxRate {
		add("rate", "%d must be between %d and %d records a second", x.Rate, ipfix.MinRate, ipfix.MaxRate)
	}
	return ps
}

// checkAFPacket runs afpacket's Validate on the ring's settings and names
// them as the file does ("afpacket.block-count: 0 must be between 1 and
// 65536"). The interface is checked on its own (interface), and the
// filter, a string here, by checkFilter.
func checkAFPacket(a *AFPacket) []problem {
	err := afpacket.Config{BlockSize: a.BlockSize, BlockCount: a.BlockCount, FrameSize: a.FrameSize,
		BlockTimeout: a.BlockTimeout, Fanout: a.Fanout}.Validate()
	var ps []problem
	for _, e := range unjoin(err) {
		var se *conferr.Error
		switch {
		case !errors.As(e, &se):
			ps = append(ps, problem{key: "afpacket", msg: e.Error()})
		case se.Key != "iface":
			ps = append(ps, problem{key: "afpacket." + se.Key, msg: se.Msg})
		}
	}
	return ps
}

// checkEBPF runs bpf/source's Validate on the eBPF capture's settings and
// names them as the file does ("ebpf.ring-size: 3000 must be a power of
// two ..."). The interface and the source are checked on their own.
func checkEBPF(e *EBPF) []problem {
	ec, ps := e.capture("x", SourceXDP)
	for _, err := range unjoin(ec.Validate()) {
		var se *conferr.Error
		switch {
		case !errors.As(err, &se):
			ps = append(ps, problem{key: "ebpf", msg: err.Error()})
		case se.Key == "sample" && e.Sample < 1:
			// said by Capture
		case se.Key != "iface" && se.Key != "source":
			ps = append(ps, problem{key: "ebpf." + se.Key, msg: se.Msg})
		}
	}
	return ps
}

// checkPipeline runs the engine's Validate and names its settings as the
// file does ("pipeline.workers: 0 must be between 1 and 256").
func checkPipeline(s *pipeline.Settings, given func(key string) bool) []problem {
	var g func(string) bool
	if given != nil {
		g = func(name string) bool { return given("pipeline." + name) }
	}
	var ps []problem
	for _, e := range unjoin(s.Validate(g)) {
		var se *pipeline.SettingError
		if errors.As(e, &se) {
			ps = append(ps, problem{key: "pipeline." + se.Name, msg: se.Value + " " + unbrace(se.Want), want: unbrace(se.Want)})
		} else {
			ps = append(ps, problem{key: "pipeline", msg: e.Error()})
		}
	}
	return ps
}

// unjoin returns the errors that err joins (errors.Join), err alone if
// it joins none, nothing if it is nil.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err != nil {
		return []error{err}
	}
	return nil
}

// unbrace writes a SettingError's Want with its {names} bare: within the
// pipeline mapping, the keys are the settings' names.
func unbrace(s string) string {
	return strings.NewReplacer("{", "", "}", "").Replace(s)
}

// checkListen says what is wrong with a host:port to listen on.
func checkListen(s string) string {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			err = errors.New(ae.Err)
		}
		return fmt.Sprintf("%q must be host:port, e.g. 127.0.0.1:9100 or :9100 (%v)", s, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Sprintf("%q: port %q must be a number from 0 to 65535", s, port)
	}
	if _, err := netip.ParseAddr(host); host != "" && err != nil && !hostName(host) {
		return fmt.Sprintf("%q: host %q is neither an IP address nor a host name", s, host)
	}
	return ""
}

// hostName reports whether s is a DNS name: dot-separated labels of
// letters, digits and '-', none starting or ending with '-'.
func hostName(s string) bool {
	if len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(strings.TrimSuffix(s, "."), ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// ifaceName reports whether Linux takes s as an interface's name
// (dev_valid_name).
func ifaceName(s string) bool {
	if s == "" || len(s) > capture.MaxIfaceName || s == "." || s == ".." {
		return false
	}
	return !strings.ContainsAny(s, "/: \t\n\v\f\r\x00")
}

// userName reports whether s is a portable user name or a uid.
func userName(s string) bool {
	if s == "" || len(s) > MaxUserName || s[0] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}
