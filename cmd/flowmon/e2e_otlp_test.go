//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// otelcolVersion is the OpenTelemetry Collector release the OTLP tests
// build (scripts/otelcol pins every collector module at it).
const otelcolVersion = "v0.161.0"

// buildOtelcol builds scripts/otelcol (the OTLP receiver and the file
// exporter) from the Go module proxy into the user's cache, where the
// next build only relinks; FLOWMON_OTELCOL names one built before.
func buildOtelcol(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("FLOWMON_OTELCOL"); p != "" {
		return p
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	bin := filepath.Join(dir, "flowmon", "otelcol-"+otelcolVersion)
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join("..", "..", "scripts", "otelcol") // its own module: flowmon's go.mod is not touched
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("the collector %s could not be built from the module proxy: %v\n%s", otelcolVersion, err, out)
	}
	return bin
}

// otelcol is a running OpenTelemetry Collector writing the logs it
// receives to a file.
type otelcol struct {
	cmd       *exec.Cmd
	out, log  string
	http, rpc string // the endpoints' URLs
}

// startOtelcol starts bin with its OTLP receiver on httpAddr and
// grpcAddr and its file exporter writing to out (JSON lines), and waits
// until both listen.
func startOtelcol(t *testing.T, bin, httpAddr, grpcAddr, out string) *otelcol {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "otelcol.yaml")
	conf := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: %s
      grpc:
        endpoint: %s
exporters:
  file:
    path: %s
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    logs:
      receivers: [otlp]
      exporters: [file]
`, httpAddr, grpcAddr, out)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &otelcol{out: out, log: filepath.Join(dir, "otelcol.log"), http: "http://" + httpAddr, rpc: "http://" + grpcAddr}
	logf, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command(bin, "--config", cfg)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.stop(t) })
	for _, a := range []string{httpAddr, grpcAddr} {
		deadline := time.Now().Add(20 * time.Second)
		for {
			conn, err := net.DialTimeout("tcp", a, time.Second)
			if err == nil {
				conn.Close()
				break
			}
			if time.Now().After(deadline) {
				b, _ := os.ReadFile(c.log)
				t.Fatalf("the collector does not listen on %s: %v\n%s", a, err, b)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c
}

// stop stops the collector (SIGTERM: its file exporter writes what it
// holds), once.
func (c *otelcol) stop(t *testing.T) {
	if c.cmd.ProcessState != nil || c.cmd.Process == nil {
		return
	}
	_ = c.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
		t.Errorf("the collector did not stop at SIGINT")
	}
}

// readCollectorFile reads the log records the file exporter wrote: one
// OTLP JSON export request a line, decoded with the official types.
func readCollectorFile(t *testing.T, path string) []*logspb.LogRecord {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []*logspb.LogRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 256<<20)
	for sc.Scan() {
		var req collogspb.ExportLogsServiceRequest
		if err := protojson.Unmarshal(sc.Bytes(), &req); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, rl := range req.GetResourceLogs() {
			for _, sl := range rl.GetScopeLogs() {
				out = append(out, sl.GetLogRecords()...)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestE2EOTLPCollector replays a generated 5,000-flow trace with OTLP
// export to a real OpenTelemetry Collector, over OTLP/HTTP and over
// OTLP/gRPC; the collector's file exporter writes the logs, and every
// record read back equals its conn.log line, field by field.
func TestE2EOTLPCollector(t *testing.T) {
	e2e(t, "go")
	bin := buildFlowmon(t)
	col := buildOtelcol(t)
	trace := filepath.Join(t.TempDir(), "gen.pcap")
	if out, err := exec.Command(bin, "gen", "-o", trace, "--flows", "5000", "--duration", "30s", "--seed", "7").CombinedOutput(); err != nil {
		t.Fatalf("flowmon gen: %v\n%s", err, out)
	}
	for _, proto := range []string{"http", "grpc"} {
		t.Run(proto, func(t *testing.T) {
			dir := t.TempDir()
			c := startOtelcol(t, col, freePort(t), freePort(t), filepath.Join(dir, "logs.json"))
			url := c.http
			if proto == "grpc" {
				url = c.rpc
			}
			flows := filepath.Join(dir, "flows.jsonl")
			// HTTP with the conn.log lines as bodies, gRPC uncompressed.
			extra := map[string][]string{"http": {"--otlp-body", "connlog"}, "grpc": {"--otlp-compression", "none"}}[proto]
			args := append([]string{"replay", "--json", "--rules", "none", "--flows-out", flows, "--otlp", url, "--otlp-protocol", proto}, extra...)
			out, err := exec.Command(bin, append(args, trace)...).Output()
			if err != nil {
				t.Fatalf("replay: %v\n%s", err, out)
			}
			var s struct {
				OTLP struct{ Sent, Dropped uint64 } `json:"otlp"`
			}
			if err := json.Unmarshal(out, &s); err != nil {
				t.Fatal(err)
			}
			c.stop(t)
			recs := readCollectorFile(t, c.out)
			n := compareOTLP(t, flows, recs, true)
			t.Logf("%s: %d records sent, the collector wrote %d, %d compared", proto, s.OTLP.Sent, len(recs), n)
			if n != 5000 || s.OTLP.Sent != 5000 || s.OTLP.Dropped != 0 {
				t.Errorf("want 5000 records sent and compared")
			}
		})
	}
}

// TestE2EOTLPLiveOutage: flowmon run on loopback exports the flows of
// short TCP connections (and its own) to a real collector, which stops
// for 10 s and starts again. Meanwhile /healthz answers 503 naming the
// exporter, after 200. With the default queue nothing is lost: every
// record of the flow log reaches the collector, before or after the
// outage, equal to its conn.log line, and the summary counts none lost.
// With a queue of 20 records the rest are counted: the collector has
// every record but those the summary counts lost, and the exit status
// says so.
func TestE2EOTLPLiveOutage(t *testing.T) {
	e2e(t, "go")
	if os.Geteuid() != 0 {
		t.Skip("flowmon run on loopback needs root (CAP_NET_RAW)")
	}
	bin := buildFlowmon(t)
	col := buildOtelcol(t)
	t.Run("default-queue", func(t *testing.T) { otlpLiveOutage(t, bin, col, 0) })
	t.Run("queue-20", func(t *testing.T) { otlpLiveOutage(t, bin, col, 20) })
}

// otlpLiveOutage is TestE2EOTLPLiveOutage with a queue of queue records
// (0: the default).
func otlpLiveOutage(t *testing.T, bin, col string, queue int) {
	dir := t.TempDir()
	httpAddr, grpcAddr := freePort(t), freePort(t)
	before, after := filepath.Join(dir, "before.json"), filepath.Join(dir, "after.json")
	c1 := startOtelcol(t, col, httpAddr, grpcAddr, before)
	flowLog := filepath.Join(dir, "flows.jsonl")
	cfg := filepath.Join(dir, "flowmon.yaml")
	conf := fmt.Sprintf("rules: none\nflow-log: %s\nexport:\n  otlp:\n    endpoint: %s\n    batch-timeout: 200ms\n", flowLog, c1.http)
	if queue > 0 {
		conf += fmt.Sprintf("    queue: %d\n", queue)
	}
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	listen := freePort(t)
	agent := exec.Command(bin, "run", "--iface", "lo", "--json", "--listen", listen, "--config", cfg)
	var stdout bytes.Buffer
	stderr := &lockedBuffer{}
	agent.Stdout, agent.Stderr = &stdout, stderr
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if agent.ProcessState == nil {
			_ = agent.Process.Kill()
			_ = agent.Wait()
		}
	}()
	health := func() (int, string) {
		resp, err := http.Get("http://" + listen + "/healthz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitFor := func(code int, want string, bound time.Duration) string {
		var last string
		for deadline := time.Now().Add(bound); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			c, body := health()
			if c == code && strings.Contains(body, want) {
				return body
			}
			last = body
		}
		t.Fatalf("/healthz never answered %d with %q; last %q\n%s", code, want, last, stderr)
		return ""
	}
	waitFor(200, "", 20*time.Second)

	// Short TCP connections on loopback, each a flow that ends (FIN),
	// for 30 s: before, during and after the outage.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				b := make([]byte, 64)
				n, _ := conn.Read(b)
				_, _ = conn.Write(b[:n])
				conn.Close()
			}()
		}
	}()
	traffic := make(chan int)
	go func() {
		n := 0
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			conn, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				continue
			}
			_, _ = conn.Write([]byte("ping"))
			b := make([]byte, 64)
			_, _ = conn.Read(b)
			conn.Close()
			n++
		}
		traffic <- n
	}()
	time.Sleep(8 * time.Second)
	c1.stop(t)
	down := time.Now()
	body := waitFor(503, "otlp:", 20*time.Second)
	t.Logf("%v after the collector stopped, /healthz: %q", time.Since(down).Round(100*time.Millisecond), body)
	time.Sleep(10*time.Second - time.Since(down))
	c2 := startOtelcol(t, col, httpAddr, grpcAddr, after)
	// The backoff's waits reach 4-8 s within a 10 s outage.
	waitFor(200, "", 30*time.Second)
	conns := <-traffic
	time.Sleep(3 * time.Second) // past the flows' ends and the batches' timeout
	if err := agent.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	_ = agent.Wait() // the exit status is checked below
	code := agent.ProcessState.ExitCode()
	c2.stop(t)
	var s liveSummary
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		t.Fatalf("summary: %v (exit %v)\n%s\n%s", err, code, stdout.String(), stderr)
	}
	recs1, recs2 := readCollectorFile(t, before), readCollectorFile(t, after)
	n := compareOTLP(t, flowLog, append(recs1, recs2...), queue == 0)
	x, cl := s.Records["otlp"], s.Records["connlog"]
	lost := x.Failed + x.Dropped
	t.Logf("%d connections; %d records: otlp took %d, %d failed, %d dropped; the collector wrote %d before the outage, %d after; %d compared; exit %d",
		conns, cl.Written, x.Written, x.Failed, x.Dropped, len(recs1), len(recs2), n, code)
	if cl.Written < uint64(conns) || x.Written+x.Failed != cl.Written || len(recs2) == 0 || uint64(n) != cl.Written-lost {
		t.Errorf("want the %d records written less the %d counted lost at the collector, some after the outage", cl.Written, lost)
	}
	if want := map[bool]int{false: 0, true: 3}[queue > 0]; code != want || (queue > 0) != (lost > 0) {
		t.Errorf("exit %d with %d records lost, want %d", code, lost, want)
	}
	if !strings.Contains(stderr.String(), "component recovered") {
		t.Errorf("no recovery logged:\n%s", stderr)
	}
}
