package agent

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/record"
	"github.com/flowmon/flowmon/record/ipfix"
)

// openIPFIX starts an IPFIX exporter to o's collectors (nil o: none) as
// a record sink in cfg, its metrics on reg, its collectors' failures
// logged to cfg.Logger and their components in cfg.Health, and returns
// what closes it.
func openIPFIX(o *ipfix.Options, reg prometheus.Registerer, cfg *pipeline.Config) (func() error, error) {
	if o == nil || len(o.Collectors) == 0 {
		return func() error { return nil }, nil
	}
	xo := *o
	xo.Logger, xo.Health = cfg.Logger, cfg.Health
	x, err := ipfix.New(xo, reg)
	if err != nil {
		return nil, err
	}
	cfg.Sinks = append(cfg.Sinks, record.Named{Name: "ipfix", Sink: x})
	return x.Close, nil
}
