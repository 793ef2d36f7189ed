package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/agent/config"
	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/internal/health"
	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/record"
	"github.com/flowmon/flowmon/record/ipfix"
)

// A part that fails while the agent runs makes /healthz answer 503
// naming its component, and 200 again once it works. Each case builds
// the part with its component in hr, and returns the component's name
// and what makes the part fail (nil: it fails from the start) and work
// again, as the world would: a collector's port closed, a webhook
// answering 500, a directory gone.
type healthCase struct {
	name  string
	start func(t *testing.T, hr *health.Registry) (component string, fail, recover func())
}

// failBound is how soon /healthz must name a part that fails.
const failBound = 10 * time.Second

func TestHealthzNamesEachFailingPart(t *testing.T) {
	for _, tc := range []healthCase{
		{"ipfix tcp refusing from the start", ipfixTCPRefusingCase},
		{"ipfix tcp", ipfixTCPCase},
		{"ipfix udp", ipfixUDPCase},
		{"otlp", otlpCase},
		{"alert sink", alertSinkCase},
		{"snapshot", snapshotCase},
		{"source", sourceCase},
		{"web config", webConfigCase},
		{"kernel drops", kernelDropsCase},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hr := health.NewRegistry()
			name, fail, recover := tc.start(t, hr)
			get := serveHealth(t, hr)
			if fail != nil {
				waitHealthz(t, get, http.StatusOK, "ok", failBound)
				fail()
			}
			body := waitHealthz(t, get, http.StatusServiceUnavailable, name+" failing since", failBound)
			_, metrics := get("/metrics")
			if !strings.Contains(metrics, `flowmon_component_up{component="`+name+`"} 0`) ||
				!strings.Contains(metrics, `flowmon_component_failures_total{component="`+name+`"} 1`) {
				t.Errorf("failing: metrics\n%s", grepMetrics(metrics, "flowmon_component_"))
			}
			recover()
			waitHealthz(t, get, http.StatusOK, "ok", 30*time.Second)
			_, metrics = get("/metrics")
			if !strings.Contains(metrics, `flowmon_component_up{component="`+name+`"} 1`) {
				t.Errorf("recovered: metrics\n%s", grepMetrics(metrics, "flowmon_component_"))
			}
			if testing.Verbose() {
				t.Logf("/healthz while failing: %s", body)
			}
		})
	}
}

// closedPort returns a loopback address on which nothing listens now.
func closedPort(t *testing.T, network string) string {
	t.Helper()
	if network == "udp" {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		return pc.LocalAddr().String()
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// ipfixTCPRefusingCase: a TCP collector that refuses connections from
// the start (listened on, then closed), no record written, then
// listening.
func ipfixTCPRefusingCase(t *testing.T, hr *health.Registry) (string, func(), func()) {
	addr := closedPort(t, "tcp")
	cfg := pipeline.Config{Health: hr}
	closeIPFIX, err := openIPFIX(&ipfix.Options{Collectors: []string{addr}, Transport: ipfix.TransportTCP}, nil, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeIPFIX() })
	recover := func() {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go acceptAll(l)
	}
	return "ipfix:" + addr, nil, recover
}

// ipfixTCPCase: a TCP collector that goes away under traffic (its
// listener and connection closed), then listens again.
func ipfixTCPCase(t *testing.T, hr *health.Registry) (string, func(), func()) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	go acceptAll(l)
	cfg := pipeline.Config{Health: hr}
	closeIPFIX, err := openIPFIX(&ipfix.Options{Collectors: []string{addr}, Transport: ipfix.TransportTCP}, nil, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeIPFIX() })
	x := cfg.Sinks[0].Sink
	fail := func() {
		l.Close()
		// The connection it had goes too: the next write fails, the
		// reconnection is refused.
		for range 20 {
			x.WriteFlows(healthFlows(10))
			time.Sleep(10 * time.Millisecond)
		}
	}
	recover := func() {
		l2, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l2.Close() })
		go acceptAll(l2)
	}
	return "ipfix:" + addr, fail, recover
}

// acceptAll accepts connections on l and drops what they send, closing
// them when l closes.
func acceptAll(l net.Listener) {
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		conns = append(conns, c)
		go io.Copy(io.Discard, c)
	}
}

// ipfixUDPCase: a UDP collector's port closed (the socket reports the
// ICMP port unreachable as ECONNREFUSED on a later write), then open.
// Records flow all along, as a live run's ended flows do.
func ipfixUDPCase(t *testing.T, hr *health.Registry) (string, func(), func()) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	go drain(pc)
	cfg := pipeline.Config{Health: hr}
	closeIPFIX, err := openIPFIX(&ipfix.Options{Collectors: []string{addr}}, nil, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	x := cfg.Sinks[0].Sink
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				x.WriteFlows(healthFlows(5))
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done; closeIPFIX() })
	fail := func() { pc.Close() }
	recover := func() {
		pc2, err := net.ListenPacket("udp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pc2.Close() })
		go drain(pc2)
	}
	return "ipfix:" + addr, fail, recover
}

func drain(pc net.PacketConn) {
	buf := make([]byte, 1<<16)
	for {
		if _, _, err := pc.ReadFrom(buf); err != nil {
			return
		}
	}
}

// healthFlows are n records as the pipeline hands its sinks.
func healthFlows(n int) []record.Flow {
	fs := make([]record.Flow, n)
	for i := range fs {
		fs[i] = record.Flow{Proto: 6, Orig: netip.MustParseAddr("192.0.2.1"), Resp: netip.MustParseAddr("192.0.2.2"),
			OrigPort: uint16(1024 + i), RespPort: 80, OrigPkts: 3, RespPkts: 2, UID: uint64(i + 1), EndReason: record.EndOfFlow}
	}
	return fs
}

// alertSinkCase: a webhook answering 500, then 200.
func alertSinkCase(t *testing.T, hr *health.Registry) (string, func(), func()) {
	var down atomic.Bool
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if down.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
		}
	}))
	t.Cleanup(hook.Close)
	file := filepath.Join(t.TempDir(), "alerting.yaml")
	yaml := "sinks:\n  - {name: hook, type: webhook, url: " + hook.URL + ", min_backoff: 5ms, max_backoff: 20ms}\n"
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	al, err := newAlerting("", "", file, io.Discard, io.Discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { al.close() })
	hr.Add(al.eng.Manager().Health()...)
	var sink alerts.Sink
	for _, s := range al.eng.Manager().Sinks() {
		if s.Name() == "hook" {
			sink = s
		}
	}
	fail := func() {
		down.Store(true)
		sink.Send(alerts.Alert{Labels: alerts.Labels{{Name: "alertname", Value: "Test"}}, StartsAt: time.Now()})
	}
	return "alerts:hook", fail, func() { down.Store(false) }
}

// ifaceFake is a live source on an interface whose state the test sets;
// it reads nothing.
type ifaceFake struct {
	capture.NoIface // its kernel counts and eBPF program: none
	st              capture.Stats
	state           atomic.Uint32
}

func (s *ifaceFake) SetDecodeOptions(capture.DecodeOptions) {}

func (s *ifaceFake) Next(*capture.Packet) error {
	time.Sleep(5 * time.Millisecond)
	if capture.IfaceState(s.state.Load()) != capture.IfaceUp {
		return capture.ErrIfaceDown
	}
	return capture.ErrNoPacket
}
func (s *ifaceFake) Stats() *capture.Stats          { return &s.st }
func (s *ifaceFake) Close() error                   { return nil }
func (s *ifaceFake) Iface() string                  { return "fake0" }
func (s *ifaceFake) IfaceState() capture.IfaceState { return capture.IfaceState(s.state.Load()) }
func (s *ifaceFake) Reopen() error                  { return errors.New("not made again yet") }

// runLive runs a live pipeline on src with hr until the test ends.
func runLive(t *testing.T, hr *health.Registry, src capture.LiveSource, opt pipeline.LiveOptions) {
	cfg := pipeline.DefaultConfig()
	cfg.ACSM.Capacity, cfg.FlowCount.ExpectedFlows, cfg.MaxFlows = 1<<10, 1<<10, 1<<10
	cfg.Health = hr
	pl, err := pipeline.NewLivePipeline(cfg, []capture.LiveSource{src})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); pipeline.RunLive(ctx, pl, opt) }()
	t.Cleanup(func() { cancel(); <-done })
}

// snapshotCase: the periodic snapshot's directory gone, then back.
func snapshotCase(t *testing.T, hr *health.Registry) (string, func(), func()) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	src := &ifaceFake{}
	src.state.Store(uint32(capture.IfaceUp))
	runLive(t, hr, src, pipeline.LiveOptions{Snapshot: filepath.Join(dir, "state.snap"), SnapshotEvery: 50 * time.Millisecond})
	fail := func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	recover := func() {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return "snapshot", fail, recover
}

// sourceCase: a capture source's interface down, then up.
func sourceCase(t *testing.T, hr *health.Registry) (string, func(), func()) {
	src := &ifaceFake{}
	src.state.Store(uint32(capture.IfaceUp))
	runLive(t, hr, src, pipeline.LiveOptions{})
	return "source:0:fake0", func() { src.state.Store(uint32(capture.IfaceDown)) }, func() { src.state.Store(uint32(capture.IfaceUp)) }
}

// webConfigCase: the web config file broken, then mended.
func webConfigCase(t *testing.T, hr *health.Registry) (string, func(), func()) {
	file := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(file, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wh := newWebHealth(file, nil)
	wh.every = 20 * time.Millisecond
	hr.Add(wh.health)
	wh.watch()
	t.Cleanup(wh.close)
	write := func(s string) func() {
		return func() {
			if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	return "web-config", write("tls_server_config: {cert_file: /nonexistent}\n"), write("{}\n")
}

// kernelDropsCase: a burst of drops over the share, then a clean link.
func kernelDropsCase(t *testing.T, hr *health.Registry) (string, func(), func()) {
	var mu sync.Mutex
	var ks capture.KernelStats
	c := health.New("kernel-drops", nil)
	hr.Add(c)
	d := newDropWatch(func() (capture.KernelStats, bool) {
		mu.Lock()
		defer mu.Unlock()
		ks.Packets += 1000
		return ks, true
	}, 0.25, c)
	d.sample()
	burst := func() {
		mu.Lock()
		ks.Drops += 5000
		mu.Unlock()
		d.sample()
	}
	clean := func() {
		for range dropSamples {
			d.sample()
		}
	}
	return "kernel-drops", burst, clean
}

// serveHealth serves /healthz and /metrics of hr (a pipeline with no
// sinks beside it) and returns a getter.
func serveHealth(t *testing.T, hr *health.Registry) func(path string) (int, string) {
	t.Helper()
	cfg := pipeline.DefaultConfig()
	cfg.Workers = 1
	lk, err := openLookups(nil, "", config.History{}, nil, &cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := pipeline.NewPipeline(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serveMetrics("127.0.0.1:0", config.Web{}, newRegistry(), hr, pl, nil, lk, nil, func() bool { return true }, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.close() })
	return httpGetter(t, srv)
}

// waitHealthz polls /healthz until it answers code with a body holding
// want, failing the test after bound; it returns the body.
func waitHealthz(t *testing.T, get func(string) (int, string), code int, want string, bound time.Duration) string {
	t.Helper()
	var last string
	var lastCode int
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		c, body := get("/healthz")
		if c == code && strings.Contains(body, want) {
			return body
		}
		lastCode, last = c, body
	}
	t.Fatalf("/healthz did not answer %d with %q within %v; last %d %q", code, want, bound, lastCode, last)
	return ""
}

// switchSink is a record sink that fails its first fails calls (as a
// full disk), then works; at its first call that works it asks check
// what /healthz says, the failure not yet over.
type switchSink struct {
	fails, calls int
	check        func()
}

func (s *switchSink) WriteFlows([]record.Flow) error {
	s.calls++
	if s.calls <= s.fails {
		return errors.New("no space left on device")
	}
	if s.calls == s.fails+1 && s.check != nil {
		s.check()
	}
	return nil
}

func (s *switchSink) Flush() error { return nil }

// TestHealthzNamesAFailingRecordSink: a record sink failing makes
// /healthz answer 503 naming it (records:NAME) until a write works; a
// replay's records come in one run, so the sink asks /healthz itself at
// the call that will work.
func TestHealthzNamesAFailingRecordSink(t *testing.T) {
	var log bytes.Buffer
	hr := health.NewRegistry()
	get := serveHealth(t, hr)
	var during int
	var duringBody string
	sink := &switchSink{fails: 3, check: func() { during, duringBody = get("/healthz") }}
	cfg := pipeline.DefaultConfig()
	cfg.Workers = 1
	cfg.Health = hr
	cfg.Logger = slog.New(slog.NewTextHandler(&log, nil))
	cfg.Sinks = []record.Named{{Name: "connlog", Sink: sink}}
	pl, err := pipeline.NewPipeline(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "g.pcap")
	out, err := os.Create(f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.Generate(out, io.Discard, gen.Options{Flows: 3000, Seed: 2, Duration: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	out.Close()
	pipeline.Replay(context.Background(), []string{f}, pipeline.ReplayOptions{Pipeline: pl})
	if sink.calls <= sink.fails+1 {
		t.Fatalf("%d calls: want more than %d", sink.calls, sink.fails+1)
	}
	if during != http.StatusServiceUnavailable || !strings.Contains(duringBody, "records:connlog failing since") ||
		!strings.Contains(duringBody, "no space left on device") {
		t.Errorf("while failing: /healthz %d %q", during, duringBody)
	}
	waitHealthz(t, get, http.StatusOK, "ok", failBound)
	logged := log.String()
	if strings.Count(logged, `level=WARN msg="component failing" component=records:connlog`) != 1 ||
		strings.Count(logged, `level=INFO msg="component recovered" component=records:connlog`) != 1 {
		t.Errorf("logged:\n%s", logged)
	}
}

// TestReloadMetrics: a reload at SIGHUP that fails sets
// flowmon_config_last_reload_successful to 0 and counts a failure; one
// that takes sets it back to 1.
func TestReloadMetrics(t *testing.T) {
	r := newReloads()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(r)
	value := func(name string) float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name {
				m := mf.GetMetric()[0]
				if g := m.GetGauge(); g != nil {
					return g.GetValue()
				}
				return m.GetCounter().GetValue()
			}
		}
		t.Fatalf("no %s", name)
		return 0
	}
	fail := true
	reload := r.wrap(func() error {
		if fail {
			return errors.New("config.yaml:3:1: unknown key")
		}
		return nil
	})
	if reload() == nil || value("flowmon_config_last_reload_successful") != 0 || value("flowmon_config_reload_failures_total") != 1 {
		t.Errorf("after a failed reload: %v, %v", value("flowmon_config_last_reload_successful"), value("flowmon_config_reload_failures_total"))
	}
	fail = false
	if reload() != nil || value("flowmon_config_last_reload_successful") != 1 || value("flowmon_config_last_reload_success_timestamp_seconds") <= 0 {
		t.Errorf("after a reload that took: %v", value("flowmon_config_last_reload_successful"))
	}
}

// httpGetter returns a function that GETs a path of srv and returns the
// status and the body.
func httpGetter(t *testing.T, srv *metricsServer) func(path string) (int, string) {
	return func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + srv.addr.String() + path)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
}
