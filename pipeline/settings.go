package pipeline

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/capture/defrag"
	"github.com/flowmon/flowmon/internal/yamlnode"
	"github.com/flowmon/flowmon/kbf"
	"github.com/flowmon/flowmon/pipeline/dedup"
	"github.com/flowmon/flowmon/pipeline/kernelflows"
)

// Settings are the pipeline's settings as an operator gives them: each
// field is one flag of `flowmon replay` and one key of the agent's config
// file, under the name in its tag. Validate checks them, once for both;
// Config turns valid settings into the stages' configuration.
type Settings struct {
	// Profile names a set of defaults (profile.go: "zeek"), applied by
	// ApplyProfile to the settings not given; "" is none.
	Profile       string        `yaml:"profile"`
	Backend       string        `yaml:"backend"`
	KBFEncoder    string        `yaml:"kbf-encoder"`
	KBFLayout     string        `yaml:"kbf-layout"`
	Machine       string        `yaml:"machine"`
	Capacity      int           `yaml:"capacity"`
	P             float64       `yaml:"p"`
	DedupWindow   time.Duration `yaml:"dedup-window"`
	Dedup         string        `yaml:"dedup"`
	NoDedup       bool          `yaml:"no-dedup"`
	RetransWindow time.Duration `yaml:"retrans-window"`
	MaxFlows      int           `yaml:"max-flows"`
	// FlowState is where the flows are kept: "user" (the shards' flow
	// tables, the default) or "kernel" (the eBPF flow state, which holds
	// max-flows cells; Config.KernelState).
	FlowState  string `yaml:"flow-state"`
	Workers    int    `yaml:"workers"`
	DecodeOnly bool   `yaml:"decode-only"`
	// CommunityIDSeed seeds the flow records' Community IDs (the spec's
	// default is 0; peers joining logs must use the same).
	CommunityIDSeed int `yaml:"community-id-seed"`
	// ActiveTimeout, when not 0, has a flow open longer than it written
	// as an interim record (its counts so far), and again each time it
	// passes, until it ends; whole seconds.
	ActiveTimeout time.Duration `yaml:"active-timeout"`
	// VerifyChecksums skips packets whose IPv4 header, TCP, UDP or ICMP
	// checksum is wrong (capture.DecodeOptions), as Zeek does unless run
	// with -C. Off by default: on a host, the packets it sends are
	// captured before the NIC fills in their checksums.
	VerifyChecksums bool `yaml:"verify-checksums"`
	// The UDP ports of each tunnel the decoder takes off ("4789",
	// "4789,8472"; "none" turns that tunnel off; "" is Zeek's), whether it looks for
	// Teredo and AYIYA on other ports too, and how deep tunnels may nest:
	// Zeek's settings, with its defaults (capture.DecodeOptions).
	VXLANPorts      string `yaml:"vxlan-ports"`
	VXLANGPEPorts   string `yaml:"vxlan-gpe-ports"`
	GenevePorts     string `yaml:"geneve-ports"`
	GTPPorts        string `yaml:"gtp-ports"`
	TeredoPorts     string `yaml:"teredo-ports"`
	AYIYAPorts      string `yaml:"ayiya-ports"`
	GREOverUDPPorts string `yaml:"gre-over-udp-ports"`
	NoTunnelDetect  bool   `yaml:"no-tunnel-detect"`
	MaxTunnelDepth  int    `yaml:"max-tunnel-depth"`
	// Defrag reassembles IP fragments into their datagrams before
	// anything counts them (on by default); the others bound it, for
	// each source (capture/defrag).
	Defrag             bool          `yaml:"defrag"`
	DefragMaxDatagrams int           `yaml:"defrag-max-datagrams"`
	DefragMaxBytes     int           `yaml:"defrag-max-bytes"`
	DefragTimeout      time.Duration `yaml:"defrag-timeout"`
	DefragPolicy       string        `yaml:"defrag-policy"`
}

// Bounds of the numeric settings. The sizes bound memory (the ACSM and
// the flow table are sized from them up front), so a typo cannot ask for
// a terabyte; the windows bound how long packets are remembered.
const (
	MaxCapacity      = 1 << 26 // 67M concurrent flows: ~4 GB of kbf at p = 0.001
	MaxMaxFlows      = 1 << 26
	MaxWorkers       = 256
	MaxDedupWindow   = 10 * time.Second
	MaxRetransWindow = time.Minute
	MaxActiveTimeout = 24 * time.Hour

	// FlowStateUser and FlowStateKernel are Settings.FlowState's values.
	FlowStateUser   = "user"
	FlowStateKernel = "kernel"
)

// DefaultSettings are what `flowmon replay` runs without flags.
func DefaultSettings() Settings {
	c := DefaultConfig()
	d := capture.DefaultDecodeOptions()
	return Settings{
		Backend:     c.ACSM.Backend.String(),
		KBFEncoder:  c.ACSM.KBFEncoder.String(),
		KBFLayout:   c.ACSM.KBFLayout.String(),
		Machine:     c.ACSM.Machine.String(),
		Capacity:    c.ACSM.Capacity,
		P:           c.ACSM.FPRate,
		DedupWindow: c.Dedup.Window,
		Dedup:       dedup.StructureTable,
		MaxFlows:    c.MaxFlows,
		FlowState:   FlowStateUser,
		Workers:     c.Workers,

		VXLANPorts:         ports(d.VXLANPorts),
		VXLANGPEPorts:      ports(d.VXLANGPEPorts),
		GenevePorts:        ports(d.GenevePorts),
		GTPPorts:           ports(d.GTPPorts),
		TeredoPorts:        ports(d.TeredoPorts),
		AYIYAPorts:         ports(d.AYIYAPorts),
		GREOverUDPPorts:    ports(d.GREOverUDPPorts),
		MaxTunnelDepth:     d.MaxTunnelDepth,
		Defrag:             !c.NoDefrag,
		DefragMaxDatagrams: c.Defrag.MaxDatagrams,
		DefragMaxBytes:     c.Defrag.MaxBytes,
		DefragTimeout:      c.Defrag.Timeout,
		DefragPolicy:       c.Defrag.Policy.String(),
	}
}

// ports spells a port list as the settings take it.
func ports(l []uint16) string {
	if len(l) == 0 {
		return "none"
	}
	s := make([]string, len(l))
	for i, p := range l {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ",")
}

// parsePorts reads a port list: ports from 1 to 65535 joined by commas,
// "none", or "" for the default, def.
func parsePorts(s string, def []uint16) ([]uint16, error) {
	switch s {
	case "none":
		return nil, nil
	case "":
		return def, nil
	}
	var l []uint16
	for _, f := range strings.Split(s, ",") {
		p, err := strconv.ParseUint(strings.TrimSpace(f), 10, 16)
		if err != nil || p == 0 {
			return nil, fmt.Errorf("%q is not a port", f)
		}
		l = append(l, uint16(p))
	}
	return l, nil
}

// DecodeOptions are the decoder's options the settings give.
func (s *Settings) DecodeOptions() (capture.DecodeOptions, error) {
	o, errs := s.decodeOptions()
	return o, errors.Join(errs...)
}

func (s *Settings) decodeOptions() (capture.DecodeOptions, []error) {
	o := capture.DefaultDecodeOptions()
	o.DetectTeredo, o.DetectAYIYA = !s.NoTunnelDetect, !s.NoTunnelDetect
	if s.MaxTunnelDepth != 0 {
		o.MaxTunnelDepth = s.MaxTunnelDepth
	}
	var errs []error
	for _, l := range []struct {
		name string
		val  string
		dst  *[]uint16
	}{{"vxlan-ports", s.VXLANPorts, &o.VXLANPorts}, {"vxlan-gpe-ports", s.VXLANGPEPorts, &o.VXLANGPEPorts}, {"geneve-ports", s.GenevePorts, &o.GenevePorts},
		{"gtp-ports", s.GTPPorts, &o.GTPPorts}, {"teredo-ports", s.TeredoPorts, &o.TeredoPorts},
		{"ayiya-ports", s.AYIYAPorts, &o.AYIYAPorts}, {"gre-over-udp-ports", s.GREOverUDPPorts, &o.GREOverUDPPorts}} {
		var err error
		if *l.dst, err = parsePorts(l.val, *l.dst); err != nil {
			errs = append(errs, &SettingError{l.name, q(l.val), "must be ports from 1 to 65535 joined by commas, or none"})
		}
	}
	if s.MaxTunnelDepth < 0 || s.MaxTunnelDepth > capture.MaxMaxTunnelDepth {
		errs = append(errs, &SettingError{"max-tunnel-depth", fmt.Sprint(s.MaxTunnelDepth), fmt.Sprintf("must be between 1 and %d (0: Zeek's %d)", capture.MaxMaxTunnelDepth, capture.DefaultMaxTunnelDepth)})
	}
	if len(errs) == 0 {
		if err := o.Validate(); err != nil {
			errs = append(errs, &SettingError{"vxlan-ports", q(s.VXLANPorts), "and the other tunnels' ports: " + err.Error()})
		}
	}
	return o, errs
}

// A SettingError says which setting is wrong, its value, and what it may
// be. Name is the setting's name (a flag without its dashes, a config
// file's key): the caller adds where it came from. Want may name other
// settings as {name}.
type SettingError struct {
	Name  string
	Value string
	Want  string
}

func (e *SettingError) Error() string { return e.Spell("") }

// Spell writes the error with prefix before every setting's name: "--"
// for flags, "" for a config file's keys.
func (e *SettingError) Spell(prefix string) string {
	want := e.Want
	for {
		i := strings.IndexByte(want, '{')
		j := strings.IndexByte(want, '}')
		if i < 0 || j < i {
			break
		}
		want = want[:i] + prefix + want[i+1:j] + want[j+1:]
	}
	return fmt.Sprintf("%s%s %s: %s", prefix, e.Name, e.Value, want)
}

// Validate checks every setting and returns all the errors found, each a
// *SettingError, joined (errors.Join; errors.As finds the first). given reports whether the operator set a setting (a
// flag on the command line, a key in the file): a setting given that
// does nothing with the others is an error, not silently ignored.
func (s *Settings) Validate(given func(name string) bool) error {
	var errs []error
	if _, ok := profileSettings[s.Profile]; !ok && s.Profile != "" {
		errs = append(errs, &SettingError{"profile", q(s.Profile), "must be " + ProfileNames + " (Zeek's defaults) or empty (none)"})
	}
	if _, err := acsm.ParseBackend(s.Backend); err != nil || s.Backend == "" {
		errs = append(errs, &SettingError{"backend", q(s.Backend), "must be " + acsm.BackendNames()})
	}
	if _, err := kbf.ParseEncoder(s.KBFEncoder); err != nil {
		errs = append(errs, &SettingError{"kbf-encoder", q(s.KBFEncoder), "must be sidon or greedy"})
	}
	if _, err := kbf.ParseLayout(s.KBFLayout); err != nil {
		errs = append(errs, &SettingError{"kbf-layout", q(s.KBFLayout), "must be standard or blocked"})
	}
	if _, err := acsm.ParseMachine(s.Machine); err != nil || s.Machine == "" {
		errs = append(errs, &SettingError{"machine", q(s.Machine), "must be zeek or flags"})
	}
	if s.Capacity < 1 || s.Capacity > MaxCapacity {
		errs = append(errs, &SettingError{"capacity", fmt.Sprint(s.Capacity), fmt.Sprintf("must be between 1 and %d (expected concurrent flows)", MaxCapacity)})
	}
	if !(s.P > 0 && s.P < 1) {
		errs = append(errs, &SettingError{"p", fmt.Sprint(s.P), "must be above 0 and below 1 (the ACSM's target error rate)"})
	}
	if s.DedupWindow <= 0 || s.DedupWindow > MaxDedupWindow {
		errs = append(errs, &SettingError{"dedup-window", s.DedupWindow.String(), fmt.Sprintf("must be above 0 and at most %v", MaxDedupWindow)})
	}
	if s.Dedup != dedup.StructureTable && s.Dedup != dedup.StructureFBF {
		errs = append(errs, &SettingError{"dedup", q(s.Dedup), "must be table (a fingerprint table, the default) or fbf (the paper's Forgetful Bloom Filter)"})
	}
	if s.RetransWindow < 0 || s.RetransWindow > MaxRetransWindow {
		errs = append(errs, &SettingError{"retrans-window", s.RetransWindow.String(), fmt.Sprintf("must be between 0 (off) and %v", MaxRetransWindow)})
	}
	if s.CommunityIDSeed < 0 || s.CommunityIDSeed > 0xffff {
		errs = append(errs, &SettingError{"community-id-seed", fmt.Sprint(s.CommunityIDSeed), "must be between 0 (the spec's default) and 65535"})
	}
	if a := s.ActiveTimeout; a != 0 && (a < time.Second || a > MaxActiveTimeout || a%time.Second != 0) {
		errs = append(errs, &SettingError{"active-timeout", a.String(), fmt.Sprintf("must be 0 (off) or whole seconds from 1s to %v", MaxActiveTimeout)})
	}
	if s.MaxFlows < 1 || s.MaxFlows > MaxMaxFlows {
		errs = append(errs, &SettingError{"max-flows", fmt.Sprint(s.MaxFlows), fmt.Sprintf("must be between 1 and %d", MaxMaxFlows)})
	}
	if s.FlowState != FlowStateUser && s.FlowState != FlowStateKernel {
		errs = append(errs, &SettingError{"flow-state", q(s.FlowState), "must be user (the default) or kernel (the eBPF flow state)"})
	}
	if s.Workers < 1 || s.Workers > MaxWorkers {
		errs = append(errs, &SettingError{"workers", fmt.Sprint(s.Workers), fmt.Sprintf("must be between 1 and %d", MaxWorkers)})
	}
	_, derrs := s.decodeOptions()
	errs = append(errs, derrs...)
	if s.Defrag {
		errs = append(errs, s.checkDefrag()...)
	}
	if len(errs) == 0 {
		errs = s.checkUseless(given)
	}
	return errors.Join(errs...)
}

// checkDefrag checks the reassembly's bounds (capture/defrag's), which
// mean something only with defrag on.
func (s *Settings) checkDefrag() []error {
	var errs []error
	if s.DefragMaxDatagrams < 1 || s.DefragMaxDatagrams > defrag.MaxMaxDatagrams {
		errs = append(errs, &SettingError{"defrag-max-datagrams", fmt.Sprint(s.DefragMaxDatagrams), fmt.Sprintf("must be between 1 and %d (datagrams in reassembly at once, each source)", defrag.MaxMaxDatagrams)})
	}
	if s.DefragMaxBytes < defrag.MinMaxBytes || s.DefragMaxBytes > defrag.MaxMaxBytes {
		errs = append(errs, &SettingError{"defrag-max-bytes", fmt.Sprint(s.DefragMaxBytes), fmt.Sprintf("must be between %d (one whole datagram) and %d (fragment bytes held, each source)", defrag.MinMaxBytes, defrag.MaxMaxBytes)})
	}
	if t := s.DefragTimeout; t <= 0 || t > defrag.MaxTimeout {
		errs = append(errs, &SettingError{"defrag-timeout", t.String(), fmt.Sprintf("must be above 0 and at most %v", defrag.MaxTimeout)})
	}
	if _, err := defrag.ParsePolicy(s.DefragPolicy); err != nil {
		errs = append(errs, &SettingError{"defrag-policy", q(s.DefragPolicy), "must be " + defrag.PolicyNames + " (whose bytes overlapping fragments keep)"})
	}
	return errs
}

// checkUseless rejects settings given that the others make do nothing.
// It runs on valid values only: "does nothing with backend foo" would
// only confuse.
func (s *Settings) checkUseless(given func(string) bool) []error {
	if given == nil {
		return nil
	}
	useless := func(name, value, why string) error {
		if given(name) {
			return &SettingError{name, value, "does nothing " + why}
		}
		return nil
	}
	var errs []error
	if s.DecodeOnly {
		why := "with {decode-only} (no stage runs)"
		for _, n := range []string{"backend", "kbf-encoder", "kbf-layout", "machine", "capacity", "p",
			"dedup-window", "dedup", "no-dedup", "retrans-window", "max-flows", "flow-state", "workers", "community-id-seed", "active-timeout"} {
			errs = append(errs, useless(n, s.value(n), why))
		}
	}
	if s.Backend != acsm.BackendKBF.String() {
		why := "with {backend} " + s.Backend + " (it sets the kbf backend)"
		errs = append(errs, useless("kbf-encoder", s.KBFEncoder, why), useless("kbf-layout", s.KBFLayout, why))
	}
	if !s.Defrag {
		why := "with {defrag} false (fragments are not reassembled)"
		for _, n := range []string{"defrag-max-datagrams", "defrag-max-bytes", "defrag-timeout", "defrag-policy"} {
			errs = append(errs, useless(n, s.value(n), why))
		}
	}
	if s.FlowState == FlowStateKernel && s.VerifyChecksums {
		errs = append(errs, &SettingError{"verify-checksums", "true", "does not work with {flow-state} kernel (the eBPF program does not check checksums)"})
	}
	if s.NoDedup {
		why := "with {no-dedup} (the dedup stage is off)"
		errs = append(errs, useless("dedup-window", s.value("dedup-window"), why),
			useless("dedup", s.value("dedup"), why), useless("retrans-window", s.value("retrans-window"), why))
	}
	var out []error
	for _, err := range errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// Config returns the stages' configuration for valid settings (Validate
// first: Config returns its error otherwise).
func (s *Settings) Config() (Config, error) {
	if err := s.Validate(nil); err != nil {
		return Config{}, err
	}
	cfg := DefaultConfig()
	var err error
	a := &cfg.ACSM
	a.Backend, err = acsm.ParseBackend(s.Backend)
	if err == nil {
		a.KBFEncoder, err = kbf.ParseEncoder(s.KBFEncoder)
	}
	if err == nil {
		a.KBFLayout, err = kbf.ParseLayout(s.KBFLayout)
	}
	if err == nil {
		a.Machine, err = acsm.ParseMachine(s.Machine)
	}
	if err == nil && s.Defrag {
		cfg.Defrag.Policy, err = defrag.ParsePolicy(s.DefragPolicy)
	}
	if err != nil {
		return Config{}, errors.Join(errors.New("settings passed Validate but not parsing"), err)
	}
	a.Capacity, a.FPRate = s.Capacity, s.P
	cfg.FlowCount.ExpectedFlows = uint64(s.Capacity)
	cfg.Dedup.Window = s.DedupWindow
	cfg.Dedup.FBF = s.Dedup == dedup.StructureFBF
	cfg.NoDedup = s.NoDedup
	if s.RetransWindow > 0 {
		cfg.Dedup.Retrans = dedup.RetransConfig{Enabled: true, Window: s.RetransWindow}
	}
	cfg.MaxFlows, cfg.Workers, cfg.DecodeOnly = s.MaxFlows, s.Workers, s.DecodeOnly
	cfg.CommunityIDSeed, cfg.ActiveTimeout = uint16(s.CommunityIDSeed), s.ActiveTimeout
	dec, err := s.DecodeOptions()
	if err != nil {
		return Config{}, err
	}
	dec.VerifyChecksums = s.VerifyChecksums
	cfg.Decode = &dec
	s.profileConfig(&cfg)
	if s.FlowState == FlowStateKernel {
		cfg.KernelState = &kernelflows.Config{Cells: s.MaxFlows}
	}
	if cfg.NoDefrag = !s.Defrag; s.Defrag {
		cfg.Defrag.MaxDatagrams, cfg.Defrag.MaxBytes, cfg.Defrag.Timeout = s.DefragMaxDatagrams, s.DefragMaxBytes, s.DefragTimeout
	}
	return cfg, nil
}

func q(s string) string { return fmt.Sprintf("%q", s) }

// value spells the setting named name (its yaml key) as a flag takes it.
func (s *Settings) value(name string) string {
	f := yamlnode.FieldByKey(reflect.ValueOf(s).Elem(), name)
	if !f.IsValid() {
		return ""
	}
	return fmt.Sprint(f.Interface()) // a time.Duration by its String, as flag's
}
