package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/internal/health"
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
// live agent: once capture runs), and /healthz also while a component of
// hr fails (a capture source, a record or alert sink, an IPFIX
// collector, the periodic snapshot, the kernel's drops, the web config
// file, which serveMetrics adds), naming each; without ready, neither is
// served. /metrics has what is registered on reg already (the record
// sinks' exporters), hr's components, the pipeline's metrics and those
// the rules and alerts (al, nil without rules), the watchlists and the
// flow history (lk) register; the watchlists' API (watchlist.Path)
// serves lk's lists.
//
// The server is secured as wc says, by exporter-toolkit as Prometheus's
// own: TLS and basic auth from its web config file (wc.Check first: an
// address beyond loopback needs one of them), and every request but GET
// and HEAD (POST /-/reload, the watchlists' POST) answers 403 unless
// wc.EnableLifecycle. Failures of the web config file while serving are
// logged to log.
func serveMetrics(addr string, wc config.Web, reg *prometheus.Registry, hr *health.Registry, pl *pipeline.Pipeline, al *alerting, lk *lookups, reload func() error, ready func() bool, log *slog.Logger) (*metricsServer, error) {
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
	wh := newWebHealth(wc.ConfigFile, log)
	if wc.ConfigFile != "" {
		hr.Add(wh.health)
	}
	if err := reg.Register(hr); err != nil {
		return nil, fmt.Errorf("register health metrics: %w", err)
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
				http.Error(w, strings.Join(append([]string{"not capturing"}, unhealthy(hr)...), "\n"), http.StatusServiceUnavailable)
				return
			}
			if bad := unhealthy(hr); len(bad) > 0 {
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
	// The server's own complaints (a TLS handshake that fails) go to the
	// log too, in its format.
	errLog := slog.NewLogLogger(orDiscard(log).Handler(), slog.LevelWarn)
	m := &metricsServer{addr: ln.Addr(), srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: errLog},
		done: make(chan error, 1), web: wh}
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

// unhealthy says which components of hr fail now, one line each (each
// failure was logged when it began, and is counted).
func unhealthy(hr *health.Registry) []string {
	var bad []string
	for _, s := range hr.Failing() {
		bad = append(bad, s.String())
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

// webHealth watches the web config file the server reads; its
// component, "web-config", fails from a check the file fails (the
// server then fails every request) to the next it passes.
type webHealth struct {
	path   string
	every  time.Duration
	stop   chan struct{}
	done   chan struct{}
	health *health.Component
}

func newWebHealth(path string, log *slog.Logger) *webHealth {
	return &webHealth{path: path, every: webHealthEvery, health: health.New("web-config", log)}
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

// check reads the file as the server will (web.Validate).
func (w *webHealth) check() {
	if err := web.Validate(w.path); err != nil {
		w.health.Fail(fmt.Errorf("web config file %s: %w: the server fails every request until it loads", w.path, err))
		return
	}
	w.health.OK()
}

func (w *webHealth) close() {
	if w.stop != nil {
		close(w.stop)
		<-w.done
	}
}
