package agent

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/pipeline/watchlist"
)

// metricsServer serves a pipeline's /metrics and /api/v1/ccf.
type metricsServer struct {
	addr net.Addr
	srv  *http.Server
	done chan error // Serve's result
	web  *webHealth
}

// serveMetrics listens on addr and serves pl until close; with reload,
// POST /-/reload calls it (the rules' reload: 200, or 400 and why). With
// ready, GET /healthz and /-/ready answer 503 until it reports true (the
// live agent: once capture runs), and /healthz also while a capture
// source's interface is down or gone, a record or alert sink or the web
// config file is failing, or a check of checks says why not (unhealthy,
// webHealth), naming them; without
// ready, neither is served. /metrics has what is registered on reg
// already (the record sinks' exporters), the pipeline's metrics and
// those the rules and alerts (al, nil without rules), the watchlists and
// the flow history (lk) register; the watchlists' API (watchlist.Path)
// serves lk's lists.
//
// The server is secured as wc says, by exporter-toolkit as Prometheus's
// own: TLS and basic auth from its web config file (wc.Check first: an
// address beyond loopback needs one of them), and every request but GET
// and HEAD (POST /-/reload, the watchlists' POST) answers 403 unless
// wc.EnableLifecycle. Failures of the web config file while serving are
// logged to log.
func serveMetrics(addr string, wc config.Web, reg *prometheus.Registry, pl *pipeline.Pipeline, al *alerting, lk *lookups, reload func() error, ready func() bool, log io.Writer, checks ...func() string) (*metricsServer, error) {
	if err := wc.Check(addr); err != nil {
		return nil, err
	}
	if al != nil {
		if err := al.register(reg); err != nil {
			return nil, err
		}
	}
	if err := lk.register(reg); err != nil {
		return nil, err
	}
	wh := newWebHealth(wc.ConfigFile, slog.New(slog.NewTextHandler(log, nil)))
	if err := reg.Register(wh); err != nil {
		return nil, fmt.Errorf("register web metrics: %w", err)
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
		checks = append([]func() string{wh.failing}, checks...)
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
			if !ready() {
				http.Error(w, strings.Join(append([]string{"not capturing"}, unhealthy(pl, al, checks)...), "\n"), http.StatusServiceUnavailable)
				return
			}
			if bad := unhealthy(pl, al, checks); len(bad) > 0 {
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
	if !wc.EnableLifecycle {
		h = readOnly(h)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	m := &metricsServer{addr: ln.Addr(), srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, done: make(chan error, 1), web: wh}
	path := wc.ConfigFile
	// The toolkit logs each request's failure to read its file; webHealth
	// says when the file starts and stops failing instead.
	go func() {
		m.done <- web.Serve(ln, m.srv, &web.FlagConfig{WebConfigFile: &path}, slog.New(slog.DiscardHandler))
	}()
	wh.watch()
	return m, nil
}

// lifecycleOff is what a request that would change the agent gets while
// the lifecycle endpoints are off (403).
const lifecycleOff = "changing the agent over HTTP is off: start flowmon with --web.enable-lifecycle (web.enable-lifecycle: true in the config) to turn it on"

// readOnly serves h's GET and HEAD requests and answers every other
// method 403: those change the running agent (POST /-/reload, the
// watchlists' POST), so whoever can reach the port must not be able to
// unless the operator says so.
func readOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, r.Method+" "+r.URL.Path+": "+lifecycleOff, http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// unhealthy says what of the agent is failing now: each capture source
// whose interface is down or gone, each record sink whose last call
// failed, each alert sink failing, a failing periodic snapshot, and what
// checks say (each failure was logged when it began, and is counted).
func unhealthy(pl *pipeline.Pipeline, al *alerting, checks []func() string) []string {
	var bad []string
	for _, h := range pl.Sources() {
		if h.State == capture.IfaceUp {
			continue
		}
		line := fmt.Sprintf("capture source %d on %s stopped: interface %s since %s (%s)", h.Index, h.Iface, h.State,
			h.Since.UTC().Format(time.RFC3339), time.Since(h.Since).Round(time.Second))
		if h.ReopenErr != "" {
			line += "; last reopen: " + h.ReopenErr
		}
		bad = append(bad, line)
	}
	for _, h := range pl.Sinks() {
		if h.Failing {
			line := fmt.Sprintf("flow record sink %s failing (%d failed calls, %d records lost)", h.Name, h.Errors, h.Failed+h.Dropped)
			if h.LastErr != nil {
				line += ": " + h.LastErr.Error()
			}
			bad = append(bad, line)
		}
	}
	if al != nil {
		for _, s := range al.eng.Manager().Sinks() {
			if st := s.Stats(); st.Failing != nil {
				bad = append(bad, fmt.Sprintf("alert sink %s failing (%d failed attempts, %d alerts queued): %v", s.Name(), st.Failed, st.Queued, st.Failing))
			}
		}
	}
	if err := pl.SnapshotFailing(); err != nil {
		bad = append(bad, fmt.Sprintf("periodic snapshot failing: %v", err))
	}
	for _, c := range checks {
		if s := c(); s != "" {
			bad = append(bad, s)
		}
	}
	return bad
}

// close stops the server and returns why it had stopped serving, if it
// had stopped before being closed.
func (m *metricsServer) close() error {
	m.web.close()
	m.srv.Close()
	if err := <-m.done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving metrics: %w", err)
	}
	return nil
}

// webHealthEvery is how often the web config file is read again to see
// whether it still serves: the server reads it at each connection and
// request, so an edit that breaks it (or a renewed certificate that does
// not load) fails every request from then on.
const webHealthEvery = 5 * time.Second

// webHealth watches the web config file the server reads: it logs when
// the file starts failing (web.Validate's error) and when it serves
// again, once each, counts the failures and exports whether it is
// failing, and /healthz names it meanwhile.
type webHealth struct {
	path  string
	log   *slog.Logger
	every time.Duration
	stop  chan struct{}
	done  chan struct{}

	mu    sync.Mutex
	err   error // the current failure, nil while the file serves
	fails uint64

	failingDesc, failsDesc *prometheus.Desc
}

func newWebHealth(path string, log *slog.Logger) *webHealth {
	return &webHealth{path: path, log: log, every: webHealthEvery,
		failingDesc: prometheus.NewDesc("flowmon_web_config_failing", "Whether the web config file (TLS, basic auth) fails to load now: the server then fails every request.", nil, nil),
		failsDesc:   prometheus.NewDesc("flowmon_web_config_failures_total", "Times the web config file started failing to load.", nil, nil)}
}

// watch checks the file every w.every until close; without a file there
// is nothing to watch.
func (w *webHealth) watch() {
	if w.path == "" {
		return
	}
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.done)
		t := time.NewTicker(w.every)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				w.check()
			}
		}
	}()
}

// check reads the file as the server will, and logs a change of state.
func (w *webHealth) check() {
	err := web.Validate(w.path)
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err != nil && w.err == nil:
		w.fails++
		w.log.Error("web config file failing: the server fails every request until it loads", "component", "web", "file", w.path, "err", err)
	case err == nil && w.err != nil:
		w.log.Info("web config file loads again", "component", "web", "file", w.path)
	}
	w.err = err
}

// failing says what fails, or "".
func (w *webHealth) failing() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		return ""
	}
	return fmt.Sprintf("web config file %s failing: %v", w.path, w.err)
}

func (w *webHealth) close() {
	if w.stop != nil {
		close(w.stop)
		<-w.done
	}
}

// Describe implements prometheus.Collector.
func (w *webHealth) Describe(ch chan<- *prometheus.Desc) {
	ch <- w.failingDesc
	ch <- w.failsDesc
}

// Collect implements prometheus.Collector.
func (w *webHealth) Collect(ch chan<- prometheus.Metric) {
	w.mu.Lock()
	failing, fails := 0.0, float64(w.fails)
	if w.err != nil {
		failing = 1
	}
	w.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(w.failingDesc, prometheus.GaugeValue, failing)
	ch <- prometheus.MustNewConstMetric(w.failsDesc, prometheus.CounterValue, fails)
}
