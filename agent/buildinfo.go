package agent

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// newRegistry is the registry an agent's or a replay's components
// register their metrics on, holding flowmon_build_info: which build
// answers a scrape, as Prometheus's own build_info says of itself.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(buildInfo())
	return reg
}

// buildInfo is the gauge flowmon_build_info, always 1, its labels the
// module's version, the VCS revision it was built from and Go's version
// (debug.ReadBuildInfo; "unknown" where the build does not say).
func buildInfo() prometheus.Gauge {
	version, revision := "unknown", "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				revision = s.Value
			}
		}
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "flowmon_build_info",
		Help:        "A metric with a constant value of 1, labelled by the version, VCS revision and Go version flowmon was built with.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": runtime.Version()},
	})
	g.Set(1)
	return g
}
