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

// BuildInfo says which build this is: the module's version, the VCS
// revision it was built from, whether the tree had changes, and Go's
// version (debug.ReadBuildInfo; "unknown" where the build does not say).
type BuildInfo struct {
	Version, Revision, GoVersion string
	Modified                     bool
}

// Build reads this binary's BuildInfo.
func Build() BuildInfo {
	b := BuildInfo{Version: "unknown", Revision: "unknown", GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			b.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && s.Value != "":
				b.Revision = s.Value
			case s.Key == "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	return b
}

// buildInfo is the gauge flowmon_build_info, always 1, labelled by
// Build's version, revision and Go version.
func buildInfo() prometheus.Gauge {
	b := Build()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "flowmon_build_info",
		Help:        "A metric with a constant value of 1, labelled by the version, VCS revision and Go version flowmon was built with.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "goversion": b.GoVersion},
	})
	g.Set(1)
	return g
}
