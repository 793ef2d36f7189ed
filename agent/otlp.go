package agent

import (
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/record"
	"github.com/flowmon/flowmon/record/otlp"
)

// openOTLP starts an OTLP exporter to o's endpoint (nil o: none) as a
// record sink in cfg, its metrics on reg, its failures logged to
// cfg.Logger and its component in cfg.Health, with the host's name and
// flowmon's version as resource attributes, and returns it (nil for
// none) and what closes it.
func openOTLP(o *otlp.Options, reg prometheus.Registerer, cfg *pipeline.Config) (*otlp.Exporter, func() error, error) {
	if o == nil || o.Endpoint == "" {
		return nil, func() error { return nil }, nil
	}
	xo := *o
	xo.Logger, xo.Health = cfg.Logger, cfg.Health
	if xo.HostName == "" {
		xo.HostName, _ = os.Hostname()
	}
	if xo.Version == "" {
		xo.Version = Build().Version
	}
	x, err := otlp.New(xo, reg)
	if err != nil {
		return nil, nil, err
	}
	cfg.Sinks = append(cfg.Sinks, record.Named{Name: "otlp", Sink: x})
	return x, x.Close, nil
}

// otlpSummary is the exporter's part of a summary.
func otlpSummary(x *otlp.Exporter) *pipeline.ExportSummary {
	s := x.Stats()
	return &pipeline.ExportSummary{Sent: s.Sent, Dropped: s.Dropped(), Batches: s.Batches, Retries: s.Retries,
		DroppedBy: map[string]uint64{"queue_full": s.DroppedQueue, "rejected": s.DroppedRejected, "unsent": s.DroppedUnsent}}
}
