package ruleseval

import (
	"net/netip"
	"testing"

	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/gen"
)

// TestScore: alerts naming the flood's target, the scanner or a heavy
// flow are detections, each instance counted once; any other alert is a
// false alarm.
func TestScore(t *testing.T) {
	a := netip.MustParseAddr
	truth := []gen.Truth{
		{OrigH: a("1.1.1.1"), RespH: a("198.18.0.8"), RespP: 80, Scenario: "synflood"},
		{OrigH: a("10.9.9.9"), OrigP: 4000, RespH: a("198.18.0.1"), RespP: 22, Scenario: "scan"},
		{OrigH: a("10.0.0.1"), OrigP: 5000, RespH: a("198.18.0.2"), RespP: 443, Scenario: "heavy"},
		{OrigH: a("10.0.0.2"), OrigP: 5001, RespH: a("198.18.0.2"), RespP: 443, Scenario: "heavy"},
		{OrigH: a("10.0.0.3"), OrigP: 5002, RespH: a("198.18.0.3"), RespP: 443, Scenario: "normal"},
	}
	j := newJudge(truth)
	alert := func(name string, ls ...string) alerts.Alert {
		x := alerts.Alert{Labels: alerts.Labels{{Name: "alertname", Value: name}}}
		for i := 0; i+1 < len(ls); i += 2 {
			x.Labels = append(x.Labels, alerts.Label{Name: ls[i], Value: ls[i+1]})
		}
		return x
	}
	heavy := func(src string, sp uint16) alerts.Alert {
		x := alert("HeavyHitter", "src", src, "dst", "198.18.0.2")
		x.Flow.SrcPort, x.Flow.DstPort = sp, 443
		return x
	}
	fired := []alerts.Alert{
		alert("SYNFlood", "dst", "198.18.0.8"), alert("SYNFlood", "dst", "198.18.0.8"),
		alert("SYNFlood", "dst", "198.18.0.9"), // not the target
		alert("PortScan", "src", "10.9.9.9"),
		heavy("10.0.0.1", 5000), heavy("10.0.0.3", 5002), // the second is a normal flow
	}
	for _, c := range []struct {
		scenario           string
		inst, det, falseAl int
	}{
		{"synflood", 1, 1, 2},
		{"scan", 1, 1, 2},
		{"heavy", 2, 1, 2},
	} {
		inst, det, fa := j.score(c.scenario, fired)
		if inst != c.inst || det != c.det || fa != c.falseAl {
			t.Errorf("%s: %d instances, %d detected, %d false alarms; want %d, %d, %d", c.scenario, inst, det, fa, c.inst, c.det, c.falseAl)
		}
	}
}
