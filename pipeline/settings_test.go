package pipeline

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture/defrag"
	"github.com/flowmon/flowmon/internal/yamlnode"
	"github.com/flowmon/flowmon/kbf"
)

// TestSettingsConfig: valid settings reach the stages' configuration
// field by field, and the defaults give DefaultConfig.
func TestSettingsConfig(t *testing.T) {
	def := DefaultSettings()
	cfg, err := def.Config()
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultConfig()
	if !reflect.DeepEqual(cfg.ACSM, d.ACSM) || cfg.MaxFlows != d.MaxFlows || cfg.Workers != d.Workers || cfg.Dedup != d.Dedup || cfg.FlowCount != d.FlowCount ||
		cfg.Defrag != d.Defrag || cfg.NoDefrag {
		t.Errorf("default settings give %+v, DefaultConfig is %+v", cfg, d)
	}
	s := Settings{Backend: "kbf", KBFEncoder: "greedy", KBFLayout: "blocked", Machine: "flags", Capacity: 1000, P: 0.01,
		DedupWindow: time.Second, Dedup: "fbf", RetransWindow: 2 * time.Second, MaxFlows: 5000, FlowState: FlowStateUser, Workers: 3,
		Defrag: true, DefragMaxDatagrams: 10, DefragMaxBytes: 1 << 20, DefragTimeout: time.Minute, DefragPolicy: "last"}
	cfg, err = s.Config()
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.ACSM
	if a.Backend != acsm.BackendKBF || a.KBFEncoder != kbf.Greedy || a.KBFLayout != kbf.Blocked || a.Machine != acsm.MachineFlags ||
		a.Capacity != 1000 || a.FPRate != 0.01 || cfg.FlowCount.ExpectedFlows != 1000 || cfg.Dedup.Window != time.Second || !cfg.Dedup.FBF ||
		!cfg.Dedup.Retrans.Enabled || cfg.Dedup.Retrans.Window != 2*time.Second || cfg.MaxFlows != 5000 || cfg.Workers != 3 ||
		cfg.NoDefrag || cfg.Defrag != (defrag.Config{MaxDatagrams: 10, MaxBytes: 1 << 20, Timeout: time.Minute, Policy: defrag.Last}) {
		t.Errorf("settings %+v gave %+v", s, cfg)
	}
}

// TestSettingErrorNamesTheSetting: a config file's error names its key
// bare, a flag's with dashes, each with the value and the allowed range.
func TestSettingErrorNamesTheSetting(t *testing.T) {
	s := DefaultSettings()
	s.Capacity = 0
	_, err := s.Config()
	var se *SettingError
	if !errors.As(err, &se) {
		t.Fatalf("capacity 0: %v, want a *SettingError", err)
	}
	if got, want := se.Error(), "capacity 0: must be between 1 and 67108864 (expected concurrent flows)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	s = DefaultSettings()
	s.Backend, s.KBFLayout = "fcf", "blocked"
	err = s.Validate(func(n string) bool { return n == "kbf-layout" || n == "backend" })
	if !errors.As(err, &se) {
		t.Fatalf("kbf-layout with fcf: %v", err)
	}
	if got, want := se.Spell("--"), "--kbf-layout blocked: does nothing with --backend fcf (it sets the kbf backend)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := se.Error(), "kbf-layout blocked: does nothing with backend fcf (it sets the kbf backend)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// Not given, the default layout is no error.
	if err := s.Validate(func(n string) bool { return n == "backend" }); err != nil {
		t.Errorf("backend fcf alone: %v", err)
	}
}

// TestSettingErrorsNameKeys: every setting an error names is a key of
// Settings (its yaml tag), and one that does nothing with the others is
// spelled with its value, as a flag takes it.
func TestSettingErrorsNameKeys(t *testing.T) {
	keys := map[string]bool{}
	for _, f := range yamlnode.Fields(reflect.TypeFor[Settings]()) {
		keys[f.Key] = true
	}
	bad := Settings{Backend: "x", KBFEncoder: "x", KBFLayout: "x", Machine: "x", P: 2, DedupWindow: -1, Dedup: "x",
		RetransWindow: -1, CommunityIDSeed: -1, ActiveTimeout: time.Millisecond, VXLANPorts: "x", GenevePorts: "x",
		GTPPorts: "x", TeredoPorts: "x", AYIYAPorts: "x", GREOverUDPPorts: "x", MaxTunnelDepth: -1, Defrag: true, DefragPolicy: "x"}
	inert := DefaultSettings()
	inert.DecodeOnly, inert.NoDedup, inert.Defrag = true, true, false
	inert.DedupWindow = 1500 * time.Millisecond
	all := func(string) bool { return true }
	n := 0
	for _, err := range append(unjoinAll(bad.Validate(all)), unjoinAll(inert.Validate(all))...) {
		var se *SettingError
		if !errors.As(err, &se) {
			t.Fatalf("%v is not a *SettingError", err)
		}
		if !keys[se.Name] {
			t.Errorf("%v names %q, no key of Settings", se, se.Name)
		}
		n++
	}
	if n < 40 {
		t.Errorf("%d errors: the settings above should give more", n)
	}
	err := inert.Validate(all)
	for _, want := range []string{"dedup-window 1.5s: does nothing with no-dedup", "defrag-policy first: does nothing with defrag false",
		"p 0.001: does nothing with decode-only", "no-dedup true: does nothing with decode-only"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\ndoes not say %q", err, want)
		}
	}
}

func unjoinAll(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// TestProfile: the zeek profile sets its settings where none was given
// and leaves a given one (`--profile zeek --verify-checksums=false` is
// Zeek's -C); its timeouts reach the ACSM; an unknown profile is an error
// naming the setting.
func TestProfile(t *testing.T) {
	s := DefaultSettings()
	s.Profile = ProfileZeek
	s.ApplyProfile(func(n string) bool { return n == "verify-checksums" })
	if !s.NoDedup || s.VerifyChecksums {
		t.Errorf("zeek profile, verify-checksums given false: no-dedup %v, verify-checksums %v", s.NoDedup, s.VerifyChecksums)
	}
	s.ApplyProfile(nil)
	cfg, err := s.Config()
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.NoDedup || !cfg.Decode.VerifyChecksums || cfg.ACSM.Timeouts.Established != zeekIdleEstablished || cfg.ACSM.Timeouts.New != zeekIdleNew {
		t.Errorf("zeek profile gives no-dedup %v, verify-checksums %v, timeouts %+v", cfg.NoDedup, cfg.Decode.VerifyChecksums, cfg.ACSM.Timeouts)
	}
	s = DefaultSettings()
	s.Profile = "suricata"
	var se *SettingError
	if err := s.Validate(nil); !errors.As(err, &se) || se.Name != "profile" {
		t.Errorf("profile suricata: %v, want a *SettingError for profile", err)
	}
}
