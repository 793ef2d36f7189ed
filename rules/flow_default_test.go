package rules

import (
	"maps"
	"testing"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/gen"
)

// TestFlowDefaultRulesOnGenTraces runs the default rules on the flowmon
// gen traces of testdata/default.rulestest.yaml (the same recipes), down
// the packet path and as flow events made from the same packets (twin:
// the records are the ACSM's flows with exact counts, each ended record
// a linger after its end, as the kernel's flow state writes them), and
// compares the alerts: every alert of the packet path is raised by the
// flow events too, and the flow events raise one more heavy hitter, for
// the reason docs/rules.md ("Flows kept in the kernel") gives: a record
// counts its flow's bytes at once, so sample and hold misses none of
// them (on packets it misses the bytes before its sample: the rules
// test's comment). The port scan's probes, answered by RSTs, leave the
// half-open count at their answers (FlowAnswered), as on packets, so the
// scan's target raises no SYNFlood.
//
// The duplicated capture's test is left out: no dedup stage sees the
// kernel's flows.
func TestFlowDefaultRulesOnGenTraces(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and evaluates 80,000 flows")
	}
	for _, c := range []struct {
		name string
		mix  string
		seed uint64
		want map[string]int // alerts by name, on packets
		more map[string]int // the flow events' more
	}{
		{"benign", "normal=1", 11, map[string]int{}, nil},
		{"synflood", "normal=0.95,synflood=0.05", 12, map[string]int{"SYNFlood": 1}, nil},
		{"scan", "normal=0.95,scan=0.05", 13, map[string]int{"PortScan": 1}, nil},
		{"heavy", "normal=0.99,heavy=0.01", 14, map[string]int{"HeavyHitter": 20}, map[string]int{"HeavyHitter": 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			opt := gen.DefaultOptions()
			opt.Flows, opt.Seed = 20000, c.seed
			m, err := gen.ParseMix(c.mix)
			if err != nil {
				t.Fatal(err)
			}
			opt.Mix = m
			g, err := gen.New(opt)
			if err != nil {
				t.Fatal(err)
			}
			w := newTwin(t, string(defaultRules), nil)
			var gp gen.Packet
			var p capture.Packet
			for g.Next(&gp) {
				if capture.Decode(&p, capture.LinkEthernet, gp.Data, gp.Length, gp.Timestamp) != capture.ReasonNone || p.Tunnels > 0 {
					continue
				}
				w.sendPacket(&p)
			}
			w.finish()
			pkt, flow := byName(w.r.rec), byName(w.frec)
			for name, n := range c.want {
				if pkt[name] != n {
					t.Errorf("packet path: %d %s alerts, want %d (the rules test's)", pkt[name], name, n)
				}
			}
			if len(pkt) != len(c.want) {
				t.Errorf("packet path: %v, want %v", pkt, c.want)
			}
			for name, n := range c.more {
				pkt[name] += n
			}
			if !maps.Equal(pkt, flow) {
				t.Errorf("flow events: %v, want %v", flow, pkt)
			}
			ps, fs := alertSet(w.r.rec), alertSet(w.frec)
			for a := range ps {
				if fs[a] == 0 {
					t.Errorf("flow events miss %s", a)
				}
			}
		})
	}
}

// byName counts a recorder's firing alerts by name.
func byName(rec *recorder) map[string]int {
	m := map[string]int{}
	for _, a := range rec.All() {
		if !a.Resolved() {
			m[a.Name()]++
		}
	}
	return m
}
