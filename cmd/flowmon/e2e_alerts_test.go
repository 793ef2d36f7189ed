package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/rules"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// alertTrace is the trace of TestE2EAlertmanagerReceivesAlerts. A SYN
// flood is over within a tenth of --duration and a scan episode within a
// second, so the default rules resolve their alerts one 10 s window
// later, in packet time; the trace is kept short (flows start within
// 10 s, seed 2's last packet is at 16.9 s) for SYNFlood and PortScan to
// be still firing when the replay ends, and so still active in
// Alertmanager. The shares give SYNFlood over its 500 half-open flows in
// one window, PortScan one 500-port episode, and HeavyHitter the flows
// over 5 MB in a minute; 20000 flows take about 2 s to generate and 1 s
// to replay.
var alertTrace = []string{"--flows", "20000", "--duration", "10s",
	"--mix", "normal=0.9,synflood=0.05,scan=0.025,heavy=0.025", "--seed", "2", "--snaplen", "96"}

// wantRules are the default rules the trace makes fire, with the
// severity and category labels rules/default.yaml gives them.
var wantRules = map[string]struct{ severity, category string }{
	"SYNFlood":    {"critical", "dos"},
	"PortScan":    {"warning", "recon"},
	"HeavyHitter": {"info", "volume"},
}

// TestE2EAlertmanagerReceivesAlerts replays a generated attack trace
// through the default rules with an Alertmanager sink, a real
// Alertmanager notifying a webhook in the test, and a real Prometheus
// scraping flowmon. The alerts still firing when the replay ends (by
// flowmon's own --alerts-out) must be exactly Alertmanager's active
// alerts, with the labels the rules give them and the attackers and
// victims of the trace's ground truth, must have reached the webhook,
// and the rules' metrics must have reached Prometheus.
func TestE2EAlertmanagerReceivesAlerts(t *testing.T) {
	e2e(t, "prometheus", "promtool", "go")
	am := alertmanagerBinary(t)
	bin := buildFlowmon(t)
	dir := t.TempDir()

	trace := filepath.Join(dir, "trace.pcap")
	if out, err := exec.Command(bin, append([]string{"gen", "-o", trace}, alertTrace...)...).CombinedOutput(); err != nil {
		t.Fatalf("flowmon gen: %v\n%s", err, out)
	}
	truth := readTruth(t, filepath.Join(dir, "trace.truth.jsonl"))

	hook := newWebhookRecorder(t)

	amAddr := freePort(t)
	amCfg := fmt.Sprintf(`route:
  receiver: test
  group_by: ['...']
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: test
    webhook_configs:
      - url: %q
        send_resolved: true
`, hook.URL)
	writeFile(t, filepath.Join(dir, "alertmanager.yml"), amCfg)
	// An empty --cluster.listen-address turns clustering off; otherwise
	// Alertmanager binds 0.0.0.0:9094.
	amProc := startProc(t, dir, "alertmanager", nil, am,
		"--config.file="+filepath.Join(dir, "alertmanager.yml"), "--storage.path="+filepath.Join(dir, "am-data"),
		"--web.listen-address="+amAddr, "--cluster.listen-address=")
	if err := eventually(amProc, 60*time.Second, func() error { return httpOK("http://" + amAddr + "/-/ready") }); err != nil {
		t.Fatalf("Alertmanager not ready: %v", err)
	}

	fmAddr := freePort(t)
	sinks := fmt.Sprintf("sinks:\n  - name: am\n    type: alertmanager\n    urls: [%q]\n    resend_interval: 1s\n", "http://"+amAddr)
	writeFile(t, filepath.Join(dir, "alerting.yaml"), sinks)
	summaryFile, err := os.Create(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer summaryFile.Close()
	alertsOut := filepath.Join(dir, "alerts.jsonl")
	fm := startProc(t, dir, "flowmon", summaryFile, bin, "replay", "--no-progress", "--json", "--listen", fmAddr, "--linger",
		"--alerting", filepath.Join(dir, "alerting.yaml"), "--alerts-out", alertsOut, trace)

	promAddr := freePort(t)
	promCfg := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: flowmon\n    static_configs:\n      - targets: [%q]\n", fmAddr)
	writeFile(t, filepath.Join(dir, "prometheus.yml"), promCfg)
	prom := startProc(t, dir, "prometheus", nil, "prometheus", "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "prom-data"), "--web.listen-address="+promAddr)

	// The replay is done when its summary is written.
	var summary struct {
		Packets uint64
		Alerts  map[string]uint64
	}
	if err := eventually(fm, 3*time.Minute, func() error {
		data, err := os.ReadFile(summaryFile.Name())
		if err != nil {
			return err
		}
		return json.Unmarshal(data, &summary)
	}); err != nil {
		t.Fatalf("no replay summary: %v", err)
	}
	for name := range wantRules {
		if summary.Alerts[name] == 0 {
			t.Fatalf("the replay raised no %s alert (summary: %v); the trace no longer makes it fire", name, summary.Alerts)
		}
	}

	// What flowmon says is firing: its --alerts-out, once every alert
	// fired and resolved is written.
	var firing, seen map[string]alertJSON
	if err := eventually(fm, 60*time.Second, func() error {
		mfs, err := scrapeSums(fmAddr)
		if err != nil {
			return err
		}
		want := int(mfs["flowmon_alerts_fired_total"] + mfs["flowmon_alerts_resolved_total"])
		var n int
		firing, seen, n, err = readAlertsOut(alertsOut)
		if err == nil && n != want {
			err = fmt.Errorf("%s holds %d alerts, flowmon fired and resolved %d", alertsOut, n, want)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for name := range wantRules {
		if !slices.ContainsFunc(slices.Collect(maps.Values(firing)), func(a alertJSON) bool { return a.Labels["alertname"] == name }) {
			t.Fatalf("no %s alert still firing when the replay ended (all resolved in packet time?); the trace no longer keeps one firing", name)
		}
	}

	// (a) Alertmanager's active alerts are flowmon's firing ones.
	var active map[string]alertJSON
	err = eventually(amProc, 60*time.Second, func() error {
		var got []alertJSON
		if err := getJSON("http://"+amAddr+"/api/v2/alerts", &got); err != nil {
			return err
		}
		active = make(map[string]alertJSON)
		for _, a := range got {
			active[labelsKey(a.Labels)] = a
		}
		return sameKeys("Alertmanager's active alerts", active, firing, firing)
	})
	if err != nil {
		t.Error(err)
	}
	for _, a := range active {
		checkAlert(t, "Alertmanager", a, firing[labelsKey(a.Labels)], truth)
	}

	// (b) Alertmanager notified the webhook of each (and of no alert
	// flowmon did not raise: one that resolved may have been notified
	// before it did).
	if err := eventually(amProc, 60*time.Second, func() error { return sameKeys("webhook's firing alerts", hook.firing(), firing, seen) }); err != nil {
		t.Error(err)
	}

	// (c) Prometheus scraped the rules' metrics.
	loaded := defaultRuleCount(t)
	queries := map[string]float64{
		"flowmon_rules_loaded":                           float64(loaded),
		`up{job="flowmon"}`:                              1,
		"sum(flowmon_capture_packets_total)":             float64(summary.Packets),
		`flowmon_alerts_sink_dropped_total{sink="am"}`:   0,
		`flowmon_alerts_sink_queue_length{sink="am"}`:    0,
		`sum(flowmon_alerts_active)`:                     float64(len(firing)),
		`flowmon_alerts_sink_sent_total{sink="am"} >= 1`: -1, // a result at all: any value
	}
	for name := range wantRules {
		queries[fmt.Sprintf(`sum(flowmon_alerts_fired_total{rule=%q,severity=%q})`, name, wantRules[name].severity)] = float64(summary.Alerts[name])
	}
	if err := eventually(prom, 60*time.Second, func() error {
		var errs []error
		for _, q := range slices.Sorted(maps.Keys(queries)) {
			v, err := promQuery(promAddr, q)
			if want := queries[q]; err == nil && want >= 0 && v != want {
				err = fmt.Errorf("Prometheus has %s = %v, want %v", q, v, want)
			}
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}); err != nil {
		t.Error(err)
	}

	// promtool's linter on what flowmon exposes with rules and sinks.
	resp, err := http.Get("http://" + fmAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lint := exec.Command("promtool", "check", "metrics")
	lint.Stdin = resp.Body
	if out, err := lint.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// alertmanagerBinary returns Debian's prometheus-alertmanager, or
// alertmanager as upstream names it, skipping the test without either.
func alertmanagerBinary(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"prometheus-alertmanager", "alertmanager"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("prometheus-alertmanager not installed (scripts/install-deps.sh e2e installs it)")
	return ""
}

// alertJSON is what the test reads of an alert, from flowmon's JSON lines,
// Alertmanager's API v2 and its webhook payload alike.
type alertJSON struct {
	Status      any // a string in JSON lines and the webhook, an object in the API
	Labels      map[string]string
	Annotations map[string]string
	StartsAt    time.Time
}

// checkAlert compares an alert as got from a service with the one flowmon
// wrote, and its labels with the rule and the trace's ground truth.
func checkAlert(t *testing.T, from string, got, want alertJSON, tr traceTruth) {
	t.Helper()
	l := got.Labels
	name := l["alertname"]
	if r, ok := wantRules[name]; ok && (l["severity"] != r.severity || l["category"] != r.category) {
		t.Errorf("%s: %s alert has severity %q category %q, want %q %q", from, name, l["severity"], l["category"], r.severity, r.category)
	}
	var ok bool
	switch name {
	case "SYNFlood":
		ok = tr.floodTargets[l["dst"]]
	case "PortScan":
		ok = tr.scanners[l["src"]]
	case "HeavyHitter":
		ok = tr.heavy[strings.Join([]string{l["proto"], l["src"], l["src_port"], l["dst"], l["dst_port"]}, " ")]
	default:
		ok = true
	}
	if !ok {
		t.Errorf("%s: %s alert %v names no attacker, victim or heavy flow of the trace", from, name, l)
	}
	if got.Annotations["summary"] != want.Annotations["summary"] {
		t.Errorf("%s: %s alert's summary %q, flowmon wrote %q", from, name, got.Annotations["summary"], want.Annotations["summary"])
	}
	// Packet time, not the time of the replay (Alertmanager keeps
	// milliseconds).
	if d := got.StartsAt.Sub(want.StartsAt); d <= -time.Millisecond || d >= time.Millisecond {
		t.Errorf("%s: %s alert starts at %v, flowmon wrote %v", from, name, got.StartsAt, want.StartsAt)
	}
}

// traceTruth is what the ground truth says the alerts may name.
type traceTruth struct {
	floodTargets map[string]bool // SYN flood victims
	scanners     map[string]bool
	heavy        map[string]bool // heavy flows: "proto src sport dst dport", originator first
}

func readTruth(t *testing.T, name string) traceTruth {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flows, err := gen.ReadTruth(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := traceTruth{map[string]bool{}, map[string]bool{}, map[string]bool{}}
	for _, fl := range flows {
		switch fl.Scenario {
		case "synflood":
			tr.floodTargets[fl.RespH.String()] = true
		case "scan":
			tr.scanners[fl.OrigH.String()] = true
		case "heavy":
			tr.heavy[fmt.Sprintf("%s %s %d %s %d", fl.Proto, fl.OrigH, fl.OrigP, fl.RespH, fl.RespP)] = true
		}
	}
	return tr
}

// readAlertsOut reads flowmon's --alerts-out: the alerts firing at its
// end and every alert it holds, by label set, and how many lines it holds.
func readAlertsOut(name string) (firing, seen map[string]alertJSON, n int, err error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, nil, 0, err
	}
	firing, seen = make(map[string]alertJSON), make(map[string]alertJSON)
	for line := range bytes.Lines(data) {
		if !bytes.HasSuffix(line, []byte("\n")) {
			break // being written
		}
		var a alertJSON
		if err := json.Unmarshal(line, &a); err != nil {
			return nil, nil, 0, fmt.Errorf("%s: line %d: %w", name, n+1, err)
		}
		n++
		seen[labelsKey(a.Labels)] = a
		if a.Status == "resolved" {
			delete(firing, labelsKey(a.Labels))
		} else {
			firing[labelsKey(a.Labels)] = a
		}
	}
	return firing, seen, n, nil
}

func labelsKey(ls map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(ls)) {
		fmt.Fprintf(&b, "%s=%q,", k, ls[k])
	}
	return b.String()
}

// sameKeys says which label sets of want got lacks, and which it has
// that allowed has not.
func sameKeys(what string, got, want, allowed map[string]alertJSON) error {
	var missing, extra []string
	for k := range want {
		if _, ok := got[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k := range got {
		if _, ok := allowed[k]; !ok {
			extra = append(extra, k)
		}
	}
	if len(missing)+len(extra) == 0 {
		return nil
	}
	slices.Sort(missing)
	slices.Sort(extra)
	return fmt.Errorf("%s: %d of flowmon's %d firing alerts missing, %d others\nmissing: %s\nothers: %s",
		what, len(missing), len(want), len(extra), strings.Join(missing, "\n  "), strings.Join(extra, "\n  "))
}

// webhookRecorder is an Alertmanager webhook receiver that keeps the
// alerts it is notified of.
type webhookRecorder struct {
	*httptest.Server
	mu     sync.Mutex
	alerts []alertJSON
}

func newWebhookRecorder(t *testing.T) *webhookRecorder {
	w := &webhookRecorder{}
	w.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var msg struct{ Alerts []alertJSON }
		if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		w.mu.Lock()
		w.alerts = append(w.alerts, msg.Alerts...)
		w.mu.Unlock()
	}))
	t.Cleanup(w.Close)
	return w
}

// firing returns the alerts notified as firing, by label set.
func (w *webhookRecorder) firing() map[string]alertJSON {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := make(map[string]alertJSON)
	for _, a := range w.alerts {
		if a.Status == "firing" {
			m[labelsKey(a.Labels)] = a
		}
	}
	return m
}

// proc is a program the test started.
type proc struct {
	name string
	done chan struct{} // closed when it exits
	err  error         // how it exited, once done
}

// startProc starts a program with its output (stdout too when stdout is
// nil) in dir/name.log. When the test ends it is sent SIGINT, and killed
// if still running 10 s later; the log of a failed test is printed.
func startProc(t *testing.T, dir, name string, stdout io.Writer, prog string, args ...string) *proc {
	t.Helper()
	logName := filepath.Join(dir, name+".log")
	log, err := os.Create(logName)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Stdout, cmd.Stderr = log, log
	if stdout != nil {
		cmd.Stdout = stdout
	}
	if err := cmd.Start(); err != nil {
		cancel()
		log.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-p.done
		log.Close()
		if t.Failed() {
			out, _ := os.ReadFile(logName)
			t.Logf("%s %s (%v); its log:\n%s", name, strings.Join(args, " "), p.err, out)
		}
	})
	return p
}

// eventually calls f every second until it returns nil and returns nil,
// or returns f's last error once d has passed or p has exited.
func eventually(p *proc, d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v): %w", p.name, p.err, err)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %w", d, err)
		}
		time.Sleep(time.Second)
	}
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func httpOK(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// scrapeSums reads flowmon's /metrics: each metric's series summed.
func scrapeSums(addr string) (map[string]float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	sums := make(map[string]float64, len(mfs))
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			sums[name] += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
		}
	}
	return sums, nil
}

func defaultRuleCount(t *testing.T) int {
	t.Helper()
	set, err := rules.Default()
	if err != nil {
		t.Fatalf("the embedded rules: %v", err)
	}
	return set.Len()
}
