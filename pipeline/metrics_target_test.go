package pipeline

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/acsm"
)

// TestACSMTargetMetric: flowmon_acsm_target_error_ratio is the configured
// p once, whatever the number of workers (the stage collector sums the
// shards' samples; the target must not be summed), and absent for the
// exact backend, which has no target.
func TestACSMTargetMetric(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backend acsm.BackendKind
		workers int
		p       float64
		want    float64 // 0: absent
	}{
		{"dleft one worker", acsm.BackendDLeft, 1, 1e-3, 1e-3},
		{"dleft three workers", acsm.BackendDLeft, 3, 1e-3, 1e-3},
		{"kbf", acsm.BackendKBF, 2, 1e-4, 1e-4},
		{"exact", acsm.BackendExact, 2, 1e-3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.ACSM.Capacity, cfg.FlowCount.ExpectedFlows = 4096, 4096
			cfg.ACSM.Backend, cfg.ACSM.FPRate, cfg.Workers = tc.backend, tc.p, tc.workers
			pl, err := NewPipeline(cfg)
			if err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewPedanticRegistry()
			if err := pl.Register(reg); err != nil {
				t.Fatal(err)
			}
			fams, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			var got []float64
			for _, f := range fams {
				if f.GetName() == "flowmon_acsm_target_error_ratio" {
					for _, m := range f.Metric {
						got = append(got, m.GetGauge().GetValue())
					}
				}
			}
			switch {
			case tc.want == 0 && len(got) != 0:
				t.Errorf("flowmon_acsm_target_error_ratio = %v, want none", got)
			case tc.want != 0 && (len(got) != 1 || got[0] != tc.want):
				t.Errorf("flowmon_acsm_target_error_ratio = %v, want [%g]", got, tc.want)
			}
		})
	}
}
