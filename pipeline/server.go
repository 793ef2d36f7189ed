package pipeline

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flowmon/flowmon/pipeline/flowcount"
)

// Handler serves the agent's HTTP API: /metrics for Prometheus (the
// pipeline's metrics on a registry of their own, plus the Go runtime's),
// flowcount.Path (/api/v1/ccf) for the last complete flow-count window, and
// /healthz; extra are more collectors for its registry (the watchlists'
// and the flow history's, which live beside the pipeline).
func Handler(pl *Pipeline, extra ...prometheus.Collector) (http.Handler, error) {
	reg := prometheus.NewRegistry()
	if err := pl.Register(reg); err != nil {
		return nil, err
	}
	for _, c := range extra {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
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
