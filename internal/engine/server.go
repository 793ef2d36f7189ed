package engine

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flowmon/flowmon/internal/flowcount"
)

// Handler serves the agent's HTTP API: /metrics for Prometheus (the
// pipeline's metrics on a registry of their own, plus the Go runtime's),
// flowcount.Path (/api/v1/ccf) for the last complete flow-count window, and
// /healthz.
func Handler(pl *Pipeline) (http.Handler, error) {
	reg := prometheus.NewRegistry()
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
