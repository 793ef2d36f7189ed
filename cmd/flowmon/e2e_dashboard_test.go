package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const rulesFile = "../../docs/prometheus/flowmon.rules.yml"

// mayBeEmpty are the metrics a replay cannot produce: the kernel's
// capture counters exist for live sources only (pipeline/live.go's
// kernelCollector), and flowmon_ipfix_* and the collectors' components
// (ipfix:HOST:PORT) only when the replay exports IPFIX, which this one
// does not. A query of these must parse, and may return nothing.
var mayBeEmpty = []string{"flowmon_capture_kernel_", "flowmon_ipfix_", `component=~"ipfix:`}

// TestE2EDashboardQueries runs flowmon replay --listen --linger on the
// sample trace with a flow log (so a record sink exists) and the default
// rules, and a real Prometheus scraping it every second with
// docs/prometheus/flowmon.rules.yml loaded. Every query of every panel of
// docs/grafana/flowmon.json, with Grafana's variables given the test's
// values, must parse and return data through the query API (those of
// mayBeEmpty must parse); every rule of the rules file must evaluate
// without error against the real metrics, and none may fire or be
// pending for a healthy agent.
func TestE2EDashboardQueries(t *testing.T) {
	e2e(t, "prometheus", "go")
	bin := buildFlowmon(t)
	dir := t.TempDir()
	rules, err := filepath.Abs(rulesFile)
	if err != nil {
		t.Fatal(err)
	}

	fmAddr := freePort(t)
	summaryFile, err := os.Create(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer summaryFile.Close()
	fm := startProc(t, dir, "flowmon", summaryFile, bin, "replay", "--no-progress", "--json", "--listen", fmAddr, "--linger",
		"--flows-out", filepath.Join(dir, "conn.jsonl"), "../../pcaps/sample.pcap")

	promAddr := freePort(t)
	promCfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: [%q]\n"+
		"scrape_configs:\n  - job_name: flowmon\n    static_configs:\n      - targets: [%q]\n", rules, fmAddr)
	writeFile(t, filepath.Join(dir, "prometheus.yml"), promCfg)
	prom := startProc(t, dir, "prometheus", nil, "prometheus", "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "prom-data"), "--web.listen-address="+promAddr)

	if err := eventually(fm, 2*time.Minute, func() error {
		var s struct{ Packets uint64 }
		data, err := os.ReadFile(summaryFile.Name())
		if err == nil {
			err = json.Unmarshal(data, &s)
		}
		return err
	}); err != nil {
		t.Fatalf("no replay summary: %v", err)
	}

	// Grafana's variables: a fixed range for $__rate_interval and
	// $__range (4 scrape intervals at least, as Grafana takes it), the
	// test's job, and its instance as Grafana puts a multi-value variable
	// into a regexp matcher: regexp-escaped, the escapes escaped again
	// for PromQL's string.
	instance := strings.ReplaceAll(regexp.QuoteMeta(fmAddr), `\`, `\\`)
	vars := strings.NewReplacer("$__rate_interval", "1m", "$__range", "1m",
		"$job", "flowmon", "$instance", instance)
	targets := readDashboard(t).targets()
	if len(targets) == 0 {
		t.Fatal("the dashboard has no query")
	}
	type outcome struct {
		n   int // series returned
		err error
	}
	results := make([]outcome, len(targets))
	check := func() error {
		var errs []error
		for i, tg := range targets {
			q := vars.Replace(tg.expr)
			if strings.Contains(q, "$") {
				results[i] = outcome{err: fmt.Errorf("a variable the test does not know: %s", q)}
				errs = append(errs, results[i].err)
				continue
			}
			n, err := promSeries(promAddr, q)
			if err == nil && n == 0 && !emptyAllowed(q) {
				err = errors.New("no data")
			}
			results[i] = outcome{n, err}
			if err != nil {
				errs = append(errs, fmt.Errorf("panel %q: %s: %w", tg.panel, q, err))
			}
		}
		return errors.Join(errs...)
	}
	// Rates need two scrapes in their range: wait for them.
	if err := eventually(prom, 60*time.Second, check); err != nil {
		t.Error(err)
	}
	for i, tg := range targets {
		var note string
		switch r := results[i]; {
		case r.err != nil:
			note = "FAILED: " + r.err.Error()
		case r.n == 0:
			note = "empty (allowed: not produced by a replay)"
		default:
			note = fmt.Sprintf("%d series", r.n)
		}
		t.Logf("%-40s %s\n\t%s", tg.panel, note, tg.expr)
	}

	// The rules evaluated without error, and a healthy agent alerts none.
	if err := eventually(prom, 30*time.Second, func() error {
		var r struct {
			Data struct {
				Groups []struct {
					Name  string
					Rules []struct {
						Name, Health, LastError, State string
					}
				}
			}
		}
		if err := getJSON("http://"+promAddr+"/api/v1/rules", &r); err != nil {
			return err
		}
		var errs []error
		n := 0
		for _, g := range r.Data.Groups {
			for _, rule := range g.Rules {
				n++
				switch {
				case rule.Health != "ok":
					errs = append(errs, fmt.Errorf("rule %s/%s: health %q %s", g.Name, rule.Name, rule.Health, rule.LastError))
				case rule.State != "" && rule.State != "inactive":
					errs = append(errs, fmt.Errorf("rule %s/%s is %s for a healthy replay", g.Name, rule.Name, rule.State))
				}
			}
		}
		if n == 0 {
			errs = append(errs, fmt.Errorf("Prometheus loaded no rule from %s", rules))
		}
		return errors.Join(errs...)
	}); err != nil {
		t.Error(err)
	}
}

func emptyAllowed(q string) bool {
	for _, m := range mayBeEmpty {
		if strings.Contains(q, m) {
			return true
		}
	}
	return false
}

// promSeries runs an instant query and returns how many series (or
// samples) it returned; a query Prometheus refuses is an error with its
// message.
func promSeries(addr, q string) (int, error) {
	resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r struct {
		Status, ErrorType, Error string
		Data                     struct {
			ResultType string
			Result     json.RawMessage
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, fmt.Errorf("query API: %s: %w", resp.Status, err)
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("%s: %s", r.ErrorType, r.Error)
	}
	switch r.Data.ResultType {
	case "vector", "matrix":
		var series []json.RawMessage
		if err := json.Unmarshal(r.Data.Result, &series); err != nil {
			return 0, err
		}
		return len(series), nil
	default: // scalar, string: one value
		return 1, nil
	}
}

// TestE2EPromtoolRules checks docs/prometheus/flowmon.rules.yml with
// promtool and runs its unit tests, flowmon.rules.test.yml.
func TestE2EPromtoolRules(t *testing.T) {
	e2e(t, "promtool")
	for _, args := range [][]string{
		{"check", "rules", rulesFile},
		{"test", "rules", "../../docs/prometheus/flowmon.rules.test.yml"},
	} {
		out, err := exec.Command("promtool", args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		} else {
			t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
		}
	}
}
