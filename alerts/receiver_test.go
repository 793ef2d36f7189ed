package alerts

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// receiver is a real HTTP server on 127.0.0.1 recording what it is
// posted. It can be stopped (listener and connections closed: the
// address refuses connections) and started again on the same address, as
// a restarted webhook or Alertmanager is.
type receiver struct {
	t    *testing.T
	addr string
	tls  bool

	mu     sync.Mutex
	srv    *httptest.Server
	reqs   []request
	answer func(n int, r *http.Request) int // status of request n (from 0); nil: 200
}

type request struct {
	path   string
	header http.Header
	body   []byte
	status int
}

// newReceiver returns a receiver on a free address, not yet started: a
// sink sending to it finds it down.
func newReceiver(t *testing.T) *receiver {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	r := &receiver{t: t, addr: addr}
	t.Cleanup(r.stop)
	return r
}

func (r *receiver) url() string {
	if r.tls {
		return "https://" + r.addr
	}
	return "http://" + r.addr
}

func (r *receiver) start() {
	r.t.Helper()
	l, err := net.Listen("tcp", r.addr)
	if err != nil {
		r.t.Fatalf("listening again on %s: %v", r.addr, err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // TLS tests fail handshakes on purpose
	srv.Listener.Close()
	srv.Listener = l
	if r.tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	r.mu.Lock()
	r.srv = srv
	r.mu.Unlock()
}

func (r *receiver) stop() {
	r.mu.Lock()
	srv := r.srv
	r.srv = nil
	r.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// server returns the running server (for its certificate).
func (r *receiver) server() *httptest.Server {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.srv
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return
	}
	r.mu.Lock()
	n, answer := len(r.reqs), r.answer
	r.reqs = append(r.reqs, request{path: req.URL.Path, header: req.Header.Clone(), body: body})
	r.mu.Unlock()
	status := http.StatusOK
	if answer != nil {
		status = answer(n, req)
	}
	r.mu.Lock()
	r.reqs[n].status = status
	r.mu.Unlock()
	w.WriteHeader(status)
}

func (r *receiver) setAnswer(f func(n int, r *http.Request) int) {
	r.mu.Lock()
	r.answer = f
	r.mu.Unlock()
}

// requests returns the requests so far; ok ones only if ok.
func (r *receiver) requests(ok bool) []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []request
	for _, q := range r.reqs {
		if !ok || q.status/100 == 2 {
			out = append(out, q)
		}
	}
	return out
}
