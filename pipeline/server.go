package pipeline

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flowmon/flowmon/pipeline/flowcount"
)

// Handler serves the agent's HTTP API: /metrics for Prometheus (reg's
// metrics, to which it adds the pipeline's and the Go runtime's),
// flowcount.Path (/api/v1/ccf) for the last complete flow-count window, and
// /healthz. reg holds the metrics of what runs beside the pipeline (the
// rules, the alerts, the watchlists, the flow history), which their
// packages register; nil for none.
func Handler(pl *Pipeline, reg *prometheus.Registry) (http.Handler, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	if err := pl.Register(reg); err != nil {
		return nil, err
	}
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, err
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.Handle(flowcount.Path, pl.CCFHandler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	return mux, nil
}
