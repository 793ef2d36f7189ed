package alerts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/conferr"
)

func parseFile(t testing.TB, path string) (Config, error) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return ParseConfig(path, data)
}

func TestParseConfigGood(t *testing.T) {
	dir := filepath.Join("testdata", "config")
	sink := func(s SinkConfig) SinkConfig { return s.WithDefaults() }
	for _, tc := range []struct {
		file string
		want []SinkConfig
	}{
		{"full.good.yaml", []SinkConfig{
			sink(SinkConfig{Name: "console", Type: SinkStdout}),
			sink(SinkConfig{Name: "archive", Type: SinkFile, Path: "/var/log/flowmon/alerts.jsonl", Format: FormatText,
				MaxSize: 10 << 20, MaxFiles: 5, MaxAge: 24 * time.Hour, MinBackoff: 50 * time.Millisecond, MaxBackoff: 10 * time.Second}),
			sink(SinkConfig{Name: "hook", Type: SinkWebhook, URL: "https://example/hook", BearerToken: "secret",
				TLS: TLSConfig{CAFile: filepath.Join(dir, "certs/ca.pem")}, Timeout: 5 * time.Second}),
			sink(SinkConfig{Name: "am", Type: SinkAlertmanager, URLs: []string{"http://127.0.0.1:9093", "http://127.0.0.2:9093/prefix"},
				ResendInterval: time.Minute, BearerTokenFile: "/run/secrets/am-token", MaxFiring: 500,
				GeneratorURL: "http://flowmon.example:9100/", Queue: 4096}),
		}},
		{"defaults.good.yaml", []SinkConfig{
			{Name: "out", Type: SinkStdout, Queue: DefaultQueue, MinBackoff: DefaultMinBackoff, MaxBackoff: DefaultMaxBackoff},
			{Name: "log", Type: SinkFile, Queue: DefaultQueue, MinBackoff: DefaultMinBackoff, MaxBackoff: DefaultMaxBackoff,
				Path: filepath.Join(dir, "alerts.jsonl"), MaxSize: 1000, MaxFiles: DefaultMaxFiles},
			{Name: "hook", Type: SinkWebhook, Queue: DefaultQueue, MinBackoff: DefaultMinBackoff, MaxBackoff: DefaultMaxBackoff,
				URL: "http://127.0.0.1:8080/", Timeout: DefaultTimeout},
			{Name: "am", Type: SinkAlertmanager, Queue: DefaultQueue, MinBackoff: DefaultMinBackoff, MaxBackoff: DefaultMaxBackoff,
				URLs: []string{"http://127.0.0.1:9093"}, Timeout: DefaultTimeout, ResendInterval: time.Minute, MaxFiring: 10000},
		}},
		{"empty.good.yaml", nil},
		{"nosinks.good.yaml", nil},
	} {
		t.Run(tc.file, func(t *testing.T) {
			c, err := parseFile(t, filepath.Join(dir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.Sinks, tc.want) {
				t.Errorf("got  %+v\nwant %+v", c.Sinks, tc.want)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

// TestParseConfigBad: every error of a file, in the file's order, each at
// its line and column and naming its sink.
func TestParseConfigBad(t *testing.T) {
	for _, tc := range []struct {
		file string
		want []string
	}{
		// yaml.v3 points at the start of the block, without a column.
		{"syntax.bad.yaml", []string{`:2: did not find expected '-' indicator`}},
		{"notamap.bad.yaml", []string{`:1:1: want a mapping with a sinks key, got a list`}},
		{"sinksnotalist.bad.yaml", []string{`:2:3: sinks: want a list of sinks, got a mapping`}},
		{"unknown.bad.yaml", []string{
			`:5:5: sink hook: unknown field "retries"`,
			`:7:7: sink hook: unknown field "ca"`,
			`:8:1: unknown field "routes"`,
		}},
		{"types.bad.yaml", []string{
			`:4:10: sink hook: url: want a string, got a list`,
			`:5:12: sink hook: queue: want an integer, got "many"`,
			`:6:14: sink hook: timeout: want a duration such as 5s or 1m30s, got 5`,
			`:7:10: sink hook: tls: want a mapping, got true`,
			`:10:11: sink am: urls: want a list of URLs, got "http://127.0.0.1:9093"`,
			`:11:17: sink am: max_firing: want an integer, got 1.5`,
			`:13:29: sink am: tls: insecure_skip_verify: want true or false, got "maybe"`,
			`:16:11: sink log: path: want a string, got a mapping`,
			`:17:15: sink log: max_size: want a size such as 10MiB, got a list`,
			`:18:5: sink #4: want a mapping, got "just a string"`,
		}},
		{"missing.bad.yaml", []string{
			`:2:5: sink hook: missing url`,
			`:4:5: sink log: missing path`,
			`:8:11: sink am: missing urls`,
			`:9:5: sink #4: missing name`,
			`:9:5: sink #4: missing type (stdout, file, webhook or alertmanager)`,
			`:10:11: sink #5: missing name`,
		}},
		{"durations.bad.yaml", []string{
			`:5:14: sink am: timeout: want a duration such as 5s or 1m30s, got 5`,
			`:6:22: sink am: resend_interval 10ms must be at least 1s (each resend posts every firing alert)`,
			`:7:18: sink am: min_backoff: -1s must be > 0`,
			`:11:14: sink hook: timeout: bad duration "soon" (want e.g. 5s or 1m30s)`,
			`:13:18: sink hook: max_backoff 1s must be at least min_backoff 2s`,
		}},
		{"dupe.bad.yaml", []string{
			`:4:11: sink out: name "out" already used by the sink at line 2`,
			`:7:5: sink out: format: already set at line 6`,
			`:8:11: sink out: name "out" already used by the sink at line 2`,
		}},
		{"wrongtype.bad.yaml", []string{
			`:5:5: sink hook: path: not a setting of type webhook`,
			`:6:5: sink hook: format: not a setting of type webhook`,
			`:10:5: sink am: url: not a setting of type alertmanager`,
			`:11:5: sink am: max_size: not a setting of type alertmanager`,
			`:13:11: sink mail: unknown type "email" (want stdout, file, webhook or alertmanager)`,
			`:17:5: sink out: tls: not a setting of type stdout`,
		}},
		{"values.bad.yaml", []string{
			`:4:10: sink hook: url ftp://127.0.0.1/: want http or https`,
			`:5:12: sink hook: queue: 0 must be > 0`,
			`:7:24: sink hook: bearer_token and bearer_token_file are exclusive`,
			`:10:11: sink am: url http://127.0.0.1:9093 given twice`,
			`:10:11: sink am: url http://:9093: no host`,
			`:10:11: sink am: url cannot be parsed: missing ']' in host`,
			`:11:12: sink am: queue 2000000 must be between 1 and 1048576`,
			`:12:17: sink am: max_firing 2000000 must be between 1 and 1048576`,
			`:13:11: sink my log: name "my log" may hold only letters, digits, '_', '-' and '.'`,
			`:16:16: sink my log: max_files: 0 must be > 0`,
			`:17:15: sink my log: max_size: bad size "10XB" (want a whole number of bytes, e.g. 1MiB, 500kB or 4096)`,
			`:18:13: sink my log: format: unknown format "xml" (want json or text)`,
			`:22:16: sink log2: max_files 1001 must be between 1 and 1000`,
			`:23:15: sink log2: max_size: bad size -1 (want bytes >= 0, or e.g. 10MiB)`,
			`:24:14: sink log2: max_age: 0s must be > 0`,
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", "config", tc.file)
			c, err := parseFile(t, path)
			if err == nil {
				t.Fatalf("no error; parsed %+v", c)
			}
			if c.Sinks != nil {
				t.Errorf("a config with the error: %+v", c)
			}
			var want []string
			for _, w := range tc.want {
				want = append(want, path+w)
			}
			if got := err.Error(); got != strings.Join(want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
			}
			var ce *conferr.Error
			if !errors.As(err, &ce) || ce.File != path || !errors.Is(err, ErrInvalid) {
				t.Errorf("errors.As(*conferr.Error): %#v", ce)
			}
		})
	}
}

// TestValidate: a Config built in code gets its defaults and the same
// checks, its errors naming the sink.
func TestValidate(t *testing.T) {
	if err := (Config{Sinks: []SinkConfig{{Name: "a", Type: SinkWebhook, URL: "http://x/"}}}).Validate(); err != nil {
		t.Errorf("zero fields with defaults: %v", err)
	}
	c := Config{Sinks: []SinkConfig{
		{Name: "a", Type: SinkStdout},
		{Name: "a", Type: SinkAlertmanager, URLs: []string{"http://x/"}, ResendInterval: time.Millisecond},
		{Type: SinkFile, Path: "/x", MaxFiles: -1, MaxAge: -time.Second},
	}}
	want := "sink a: resend_interval 1ms must be at least 1s (each resend posts every firing alert)\n" +
		`sink a: name "a" used by another sink` + "\n" +
		"sink #3: missing name\n" +
		"sink #3: max_age -1s must be >= 0\n" +
		"sink #3: max_files -1 must be between 1 and 1000"
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Errorf("got:\n%v\nwant:\n%s", err, want)
	}
	if _, err := c.Open(); err == nil || err.Error() != want {
		t.Errorf("Open: %v", err)
	}
}

// TestOpen makes one sink of each type from YAML and delivers through
// each for real.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	wh, am := newReceiver(t), newReceiver(t)
	wh.start()
	am.start()
	yaml := `sinks:
  - {name: out, type: stdout, format: text}
  - {name: archive, type: file, path: alerts.jsonl}
  - {name: hook, type: webhook, url: "` + wh.url() + `/hook", bearer_token: s3cret}
  - {name: am, type: alertmanager, urls: ["` + am.url() + `/prefix"]}
`
	c, err := ParseConfig(filepath.Join(dir, "sinks.yaml"), []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	c.stdout = &out
	sinks, err := c.Open()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range sinks {
		names = append(names, s.Name())
		if !s.Send(seqAlert(7)) {
			t.Errorf("%s refused the alert", s.Name())
		}
	}
	for _, s := range sinks {
		if err := s.Close(context.Background()); err != nil {
			t.Error(err)
		}
		if st := s.Stats(); st != (SinkStats{Sent: 1}) {
			t.Errorf("%s: stats %+v", s.Name(), st)
		}
	}
	if strings.Join(names, " ") != "out archive hook am" {
		t.Errorf("sinks %v", names)
	}
	wantSeqLines(t, out.String(), FormatText, 7, 8)
	wantSeqLines(t, readFile(t, filepath.Join(dir, "alerts.jsonl")), FormatJSON, 7, 8)
	wantSeqLines(t, webhookBodies(wh), FormatJSON, 7, 8)
	if got := wh.requests(true)[0].header.Get("Authorization"); got != "Bearer s3cret" {
		t.Errorf("Authorization %q", got)
	}
	if p := amPosted(t, am); len(p) != 1 || p[0].Labels["seq"] != "7" {
		t.Errorf("alertmanager got %+v", p)
	}
}

// TestOpenError: a sink that cannot open fails Open, naming it.
func TestOpenError(t *testing.T) {
	dir := t.TempDir()
	c := Config{Sinks: []SinkConfig{
		{Name: "first", Type: SinkFile, Path: filepath.Join(dir, "ok.jsonl")},
		{Name: "archive", Type: SinkFile, Path: filepath.Join(dir, "missing", "alerts.jsonl")},
	}}
	sinks, err := c.Open()
	if sinks != nil || err == nil || !strings.HasPrefix(err.Error(), "opening alert sink archive: opening alert file: open ") {
		t.Errorf("got %v, %v", sinks, err)
	}
	c.Sinks = []SinkConfig{{Name: "hook", Type: SinkWebhook, URL: "http://x/", TLS: TLSConfig{CAFile: filepath.Join(dir, "ca.pem")}}}
	if _, err := c.Open(); err == nil || !strings.HasPrefix(err.Error(), "opening alert sink hook: reading CA file: open ") {
		t.Errorf("got %v", err)
	}
}

// FuzzParseConfig: no input panics, and what parses validates.
func FuzzParseConfig(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "config", "*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig("f.yaml", data)
		if err != nil {
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				if ce, ok := e.(*conferr.Error); !ok || ce.File != "f.yaml" || !errors.Is(ce, ErrInvalid) {
					t.Fatalf("error %T %v", e, e)
				}
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("parsed config does not validate: %v", err)
		}
	})
}
