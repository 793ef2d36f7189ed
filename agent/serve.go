package agent

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/pipeline/watchlist"
)

// metricsServer serves a pipeline's /metrics and /api/v1/ccf.
type metricsServer struct {
	addr net.Addr
	srv  *http.Server
	done chan error // Serve's result
}

// serveMetrics listens on addr and serves pl until close; with reload,
// POST /-/reload calls it (the rules' reload: 200, or 400 and why). With
// ready, GET /healthz and /-/ready answer 503 until it reports true (the
// live agent: once capture runs), and /healthz also while a record sink
// or an alert sink is failing (unhealthy); without ready, neither is
// served. /metrics
// has what is registered on reg already (the record sinks' exporters),
// the pipeline's metrics and those the rules and alerts (al, nil without
// rules), the watchlists and the flow history (lk) register; the
// watchlists' API (watchlist.Path) serves lk's lists.
func serveMetrics(addr string, reg *prometheus.Registry, pl *pipeline.Pipeline, al *alerting, lk *lookups, reload func() error, ready func() bool) (*metricsServer, error) {
	if al != nil {
		if err := al.register(reg); err != nil {
			return nil, err
		}
	}
	if err := lk.register(reg); err != nil {
		return nil, err
	}
	ph, err := pipeline.Handler(pl, reg)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/", ph)
	mux.Handle(watchlist.Path, lk.wl.Handler())
	if ready != nil {
		mux.HandleFunc("GET /-/ready", func(w http.ResponseWriter, _ *http.Request) {
			if !ready() {
				http.Error(w, "not capturing", http.StatusServiceUnavailable)
				return
			}
			w.Write([]byte("ok\n"))
		})
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
			if !ready() {
				http.Error(w, "not capturing", http.StatusServiceUnavailable)
				return
			}
			if bad := unhealthy(pl, al); len(bad) > 0 {
				http.Error(w, strings.Join(bad, "\n"), http.StatusServiceUnavailable)
				return
			}
			w.Write([]byte("ok\n"))
		})
	}
	if reload != nil {
		mux.HandleFunc("POST /-/reload", func(w http.ResponseWriter, _ *http.Request) {
			if err := reload(); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			w.Write([]byte("reloaded\n"))
		})
	}
	h := http.Handler(mux)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	m := &metricsServer{addr: ln.Addr(), srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, done: make(chan error, 1)}
	go func() { m.done <- m.srv.Serve(ln) }()
	return m, nil
}

// unhealthy says what of pl and al (nil without rules) is failing now:
// each record sink whose last call failed, and each alert sink whose
// deliveries fail (retried). Their failures were logged when they began,
// and are counted.
func unhealthy(pl *pipeline.Pipeline, al *alerting) []string {
	var bad []string
	for _, h := range pl.Sinks() {
		if h.Failing {
			bad = append(bad, fmt.Sprintf("flow record sink %s failing (%d failed calls, %d records lost)", h.Name, h.Errors, h.Failed))
		}
	}
	if al == nil {
		return bad
	}
	for _, s := range al.eng.Manager().Sinks() {
		if st := s.Stats(); st.Failing != nil {
			bad = append(bad, fmt.Sprintf("alert sink %s failing: %v (%d failed attempts, %d alerts queued)", s.Name(), st.Failing, st.Failed, st.Queued))
		}
	}
	return bad
}

// close stops the server and returns why it had stopped serving, if it
// had stopped before being closed.
func (m *metricsServer) close() error {
	m.srv.Close()
	if err := <-m.done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving metrics: %w", err)
	}
	return nil
}
