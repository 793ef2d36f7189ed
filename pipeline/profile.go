package pipeline

import (
	"reflect"
	"time"

	"github.com/flowmon/flowmon/internal/yamlnode"
)

// A profile is a named set of settings applied before the operator's own:
// every setting the operator did not give takes the profile's value, and
// one given keeps its own (`--profile zeek --verify-checksums=false` is
// Zeek run with -C). Settings.Profile names it; ApplyProfile applies it.
const (
	// ProfileZeek runs the pipeline as Zeek runs on a trace, so that the
	// flow log reads as its conn.log: every packet counted (no dedup),
	// checksums verified, and Zeek's inactivity timeouts
	// (docs/results/zeek-agreement.md, "The zeek profile").
	ProfileZeek = "zeek"
)

// Zeek's inactivity timeouts (base/init-bare.zeek): tcp_inactivity_timeout
// for a connection both sides spoke in, udp_inactivity_timeout and
// icmp_inactivity_timeout (and the attempt, which tcp_attempt_delay ends
// first) for the rest.
const (
	zeekIdleEstablished = 5 * time.Minute
	zeekIdleNew         = time.Minute
)

// profileSettings are a profile's values by setting (yaml key): the
// settings it changes from DefaultSettings.
var profileSettings = map[string]map[string]any{
	ProfileZeek: {
		// Zeek counts every copy of a packet: its orig_pkts, resp_pkts and
		// its T/t letters include the copies dedup drops.
		"no-dedup": true,
		// Zeek drops a packet with a bad checksum unless run with -C.
		"verify-checksums": true,
	},
}

// ProfileNames lists the profiles, for usage and errors.
const ProfileNames = "zeek"

// ApplyProfile sets every setting of s's profile that given reports the
// operator did not give to the profile's value. A profile it does not
// know changes nothing (Validate says so). given nil: nothing was given.
func (s *Settings) ApplyProfile(given func(name string) bool) {
	v := reflect.ValueOf(s).Elem()
	for name, val := range profileSettings[s.Profile] {
		if given != nil && given(name) {
			continue
		}
		if name == "verify-checksums" && s.FlowState == FlowStateKernel {
			continue // the eBPF program checks none: Validate refuses it there
		}
		if f := yamlnode.FieldByKey(v, name); f.IsValid() {
			f.Set(reflect.ValueOf(val))
		}
	}
}

// profileConfig applies what a profile changes beyond the settings: the
// stages' configuration that has no setting of its own.
func (s *Settings) profileConfig(cfg *Config) {
	if s.Profile == ProfileZeek {
		cfg.ACSM.Timeouts.New, cfg.ACSM.Timeouts.Established = zeekIdleNew, zeekIdleEstablished
	}
}
