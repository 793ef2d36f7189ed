package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/flowmon/flowmon/internal/engine"
)

// A problem is one broken rule, and the key it is about.
type problem struct {
	key, msg string
	want     string // of a pipeline setting: what it may be, without its value
}

// Validate checks c as Parse and Set do, and returns every problem, each
// an *Error naming its key, joined (errors.Join). It cannot say that a
// setting does nothing with the others (pipeline.kbf-encoder with
// another backend): only Parse and Set know what the operator gave.
func (c Config) Validate() error {
	var errs []error
	for _, p := range c.check(nil) {
		errs = append(errs, &Error{Key: p.key, Msg: p.msg})
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
		add("interface", "%q is not an interface name (1 to %d bytes, not . or .., without '/', ':' or spaces)", c.Interface, MaxIfaceName)
	}
	if c.Source != SourceAFPacket && c.Source != SourcePcap {
		add("source", "%q must be %s or %s", c.Source, SourceAFPacket, SourcePcap)
	}

	a := &c.AFPacket
	bs := a.BlockSize
	bsOK := bs >= MinBlockSize && bs <= MaxBlockSize && bs&(bs-1) == 0 && bs%PageSize == 0
	if !bsOK {
		add("afpacket.block-size", "%s must be a power of two from %s to %s (a whole number of %d-byte pages)",
			formatSize(int64(bs)), formatSize(MinBlockSize), formatSize(MaxBlockSize), PageSize)
	}
	switch n := a.BlockCount; {
	case n < 1 || n > MaxBlockCount:
		add("afpacket.block-count", "%d must be between 1 and %d", n, MaxBlockCount)
	case bsOK && int64(bs)*int64(n) > MaxRingSize:
		add("afpacket.block-count", "%d blocks of %s make a ring of %s: block-size × block-count must be at most %s",
			n, formatSize(int64(bs)), formatSize(int64(bs)*int64(n)), formatSize(MaxRingSize))
	}
	if fs := a.FrameSize; fs < MinFrameSize || fs%FrameAlign != 0 || (bsOK && fs > bs) || fs > MaxBlockSize {
		most := "block-size"
		if bsOK {
			most += " (" + formatSize(int64(bs)) + ")"
		}
		add("afpacket.frame-size", "%s must be a multiple of %d from %d to %s", formatSize(int64(fs)), FrameAlign, MinFrameSize, most)
	}
	if t := a.BlockTimeout; t < MinTimeout || t > MaxTimeout {
		add("afpacket.block-timeout", "%s must be between %s and %s", formatDuration(t), formatDuration(MinTimeout), formatDuration(MaxTimeout))
	}
	switch a.Fanout {
	case FanoutHash, FanoutCPU, FanoutLB:
	default:
		add("afpacket.fanout", "%q must be %s, %s or %s", a.Fanout, FanoutHash, FanoutCPU, FanoutLB)
	}
	if msg := checkFilter(a.Filter); msg != "" {
		add("afpacket.filter", "%s", msg)
	}

	if n := c.Pcap.Snaplen; n < MinSnaplen || n > MaxSnaplen {
		add("pcap.snaplen", "%d must be between %d and %d", n, MinSnaplen, MaxSnaplen)
	}
	if msg := checkFilter(c.Pcap.Filter); msg != "" {
		add("pcap.filter", "%s", msg)
	}
	if t := c.Pcap.Timeout; t < MinTimeout || t > MaxTimeout {
		add("pcap.timeout", "%s must be between %s and %s", formatDuration(t), formatDuration(MinTimeout), formatDuration(MaxTimeout))
	}

	ps = append(ps, checkPipeline(&c.Pipeline, given)...)

	if msg := checkListen(c.Listen); msg != "" {
		add("listen", "%s", msg)
	}
	if t := c.Snapshot.MaxAge; t < MinMaxAge || t > MaxMaxAge {
		add("snapshot.max-age", "%s must be between %s and %s", formatDuration(t), formatDuration(MinMaxAge), formatDuration(MaxMaxAge))
	}
	if c.User != "" && !userName(c.User) {
		add("user", "%q is not a user name or uid (1 to %d letters, digits, '_', '-' or '.', not starting with '-')", c.User, MaxUserName)
	}
	if t := c.StopTimeout; t < MinStopTimeout || t > MaxStopTimeout {
		add("stop-timeout", "%s must be between %s and %s", formatDuration(t), formatDuration(MinStopTimeout), formatDuration(MaxStopTimeout))
	}
	return ps
}

// checkPipeline runs the engine's Validate and names its settings as the
// file does ("pipeline.workers: 0 must be between 1 and 256").
func checkPipeline(s *engine.Settings, given func(key string) bool) []problem {
	var g func(string) bool
	if given != nil {
		g = func(name string) bool { return given("pipeline." + name) }
	}
	err := s.Validate(g)
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var ps []problem
	for _, e := range errs {
		var se *engine.SettingError
		if errors.As(e, &se) {
			ps = append(ps, problem{key: "pipeline." + se.Name, msg: se.Value + " " + unbrace(se.Want), want: unbrace(se.Want)})
		} else {
			ps = append(ps, problem{key: "pipeline", msg: e.Error()})
		}
	}
	return ps
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
	if s == "" || len(s) > MaxIfaceName || s == "." || s == ".." {
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
