package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/flowmon/flowmon/agent/config"
)

// TestConfigCheck: every good file of the config package is valid and
// prints its effective configuration, which reads back to the same
// configuration; every bad one gives the parser's messages, each with
// file:line:col, and exit 1; no file prints the defaults.
func TestConfigCheck(t *testing.T) {
	const dir = "../../agent/config/testdata/"
	good, _ := filepath.Glob(dir + "*.good.yaml")
	if len(good) == 0 {
		t.Fatal("no good files")
	}
	for _, f := range good {
		var out, errb bytes.Buffer
		// Made for a machine with a flowmon user and /var/lib/flowmon.
		if code := run([]string{"config", "--offline", "check", f}, &out, &errb); code != 0 {
			t.Errorf("%s: exit %d: %s", f, code, errb.String())
			continue
		}
		text, ok := strings.CutPrefix(out.String(), f+": valid\n")
		if !ok {
			t.Errorf("%s: no valid line:\n%s", f, out.String())
			continue
		}
		want, _ := config.Load(f)
		if got, err := config.Parse("effective.yaml", []byte(text)); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the printed configuration reads back as %+v, %v; want %+v", f, got, err, want)
		}
	}

	bad, _ := filepath.Glob(dir + "*.bad.yaml")
	for _, f := range bad {
		var out, errb bytes.Buffer
		if code := run([]string{"config", "check", f}, &out, &errb); code != 1 || out.Len() > 0 {
			t.Errorf("%s: exit %d, stdout %q; want 1 and nothing", f, code, out.String())
		}
		want, err := os.ReadFile(f + ".golden")
		if err != nil {
			t.Fatal(err)
		}
		// The golden files name the file as the config package's tests
		// open it (testdata/...); here it is opened from cmd/flowmon.
		wantText := strings.ReplaceAll(string(want), "testdata/", dir)
		n := strings.Count(wantText, "\n")
		last := "flowmon config: " + f + ": " + plural(n, "error") + "\n"
		if errb.String() != wantText+last {
			t.Errorf("%s: stderr\n%s\nwant\n%s%s", f, errb.String(), wantText, last)
		}
	}

	var out, errb bytes.Buffer
	if code := run([]string{"config", "check"}, &out, &errb); code != 0 {
		t.Fatalf("no file: exit %d: %s", code, errb.String())
	}
	if got, err := config.Parse("defaults.yaml", out.Bytes()); err != nil || !reflect.DeepEqual(got, config.Default()) {
		t.Errorf("no file: printed %s\nwhich reads back as %+v, %v", out.String(), got, err)
	}
}

// TestConfigCheckNamedFiles: the rules and alerting files a config
// names are checked too, from the config's directory.
func TestConfigCheckNamedFiles(t *testing.T) {
	dir := t.TempDir()
	write := writerIn(t, dir)
	write("rules.yaml", "groups:\n  - name: g\n    rules:\n      - alert: X\n        kind: nope\n")
	write("alerting.yaml", "sinks:\n  - {name: out, type: email}\n")
	cfg := write("flowmon.yaml", "rules: rules.yaml\nalerting: alerting.yaml\n")
	var out, errb bytes.Buffer
	code := run([]string{"config", "check", cfg}, &out, &errb)
	for _, want := range []string{
		filepath.Join(dir, "rules.yaml") + `:5:15: rule "X": unknown kind "nope"`,
		filepath.Join(dir, "alerting.yaml") + `:2:23: sink out: unknown type "email"`,
		"flowmon config: " + cfg + ": 2 files it names with errors\n",
	} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
	if code != 1 || out.Len() > 0 {
		t.Errorf("exit %d, stdout %q", code, out.String())
	}

	write("rules.yaml", "groups:\n  - name: g\n    rules:\n      - alert: X\n        kind: anomaly\n        anomaly: [xmas]\n")
	write("alerting.yaml", "sinks:\n  - {name: out, type: stdout}\n")
	out.Reset()
	errb.Reset()
	if code := run([]string{"config", "check", cfg}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "\nrules: "+filepath.Join(dir, "rules.yaml")+"\n") {
		t.Errorf("fixed: exit %d\n%s%s", code, out.String(), errb.String())
	}

	out.Reset()
	errb.Reset()
	if code := run([]string{"config", "check", filepath.Join(dir, "missing.yaml")}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "no such file") {
		t.Errorf("a missing file: exit %d: %s", code, errb.String())
	}
}

// writerIn returns what writes a file in dir and returns its path.
func writerIn(t *testing.T, dir string) func(name, text string) string {
	return func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		writeFile(t, p, text)
		return p
	}
}

func TestConfigUsage(t *testing.T) {
	for _, args := range [][]string{{"config"}, {"config", "nope"}, {"config", "check", "a", "b"}, {"config", "--bad"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 || out.Len() > 0 || !strings.HasPrefix(errb.String(), "flowmon config: ") &&
			!strings.Contains(errb.String(), "flag provided but not defined") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out.String(), errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"help", "config"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "usage: flowmon config [--offline] check [FILE]") {
		t.Errorf("help: exit %d: %s", code, out.String())
	}
}

// TestConfigCheckWatchlists: config check reads the lists' files as the
// agent will (one it cannot read is an error, the lines it would skip are
// said), and checks that the rules name only lists the config gives.
func TestConfigCheckWatchlists(t *testing.T) {
	dir := t.TempDir()
	write := writerIn(t, dir)
	write("rules.yaml", "groups:\n  - name: g\n    rules:\n      - alert: Bad\n        kind: watchlist\n        watchlist: {list: bad}\n")
	write("blocked.txt", "192.0.2.0/24\nnot-an-address\n")
	check := func(cfg string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run([]string{"config", "check", write("flowmon.yaml", cfg)}, &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errs := check("rules: rules.yaml\nwatchlists:\n  lists:\n    - {name: blocked, file: blocked.txt}\n    - {name: gone, file: gone.txt}\n")
	for _, want := range []string{
		"watchlist blocked: the agent skips " + filepath.Join(dir, "blocked.txt") + `:2: "not-an-address" is not an address or CIDR prefix`,
		"watchlist gone: open " + filepath.Join(dir, "gone.txt") + ": no such file or directory",
		filepath.Join(dir, "rules.yaml") + `:4:9: rule "Bad": no watchlist "bad" (the agent has [blocked gone])`,
		": 2 files it names with errors",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if code != 1 || out != "" {
		t.Errorf("exit %d, stdout %q", code, out)
	}
	if code, _, errs := check("rules: none\nwatchlists: {lists: [{name: bad, file: blocked.txt}]}\n"); code != 1 || !strings.Contains(errs, "watchlists do nothing without rules") {
		t.Errorf("lists without rules: exit %d: %s", code, errs)
	}
	code, out, errs = check("rules: rules.yaml\nwatchlists: {lists: [{name: bad, file: blocked.txt}]}\n")
	if code != 0 || !strings.Contains(out, "    - name: bad\n      file: "+filepath.Join(dir, "blocked.txt")+"\n") {
		t.Errorf("fixed: exit %d\n%s%s", code, out, errs)
	}
}

// TestListenBeyondLoopbackNeedsWebConfig: config check, run and replay
// refuse to serve beyond loopback without a web config file that sets
// TLS or basic auth, naming the option; config check takes the address
// with one.
func TestListenBeyondLoopbackNeedsWebConfig(t *testing.T) {
	dir := t.TempDir()
	write := writerIn(t, dir)
	web, _ := filepath.Abs("../../agent/config/testdata/ref/web.yml") // basic auth
	open := write("open.yaml", "listen: \":9100\"\n")
	var out, errb bytes.Buffer
	code := run([]string{"config", "check", open}, &out, &errb)
	want := `listen: ":9100" is reachable beyond this host, and no web config file (web.config-file, --web.config.file) sets TLS or basic auth: give one that does, or listen on 127.0.0.1` +
		"\nflowmon config: " + open + ": 1 error\n"
	if code != 1 || out.Len() > 0 || errb.String() != want {
		t.Errorf("no web config: exit %d, stdout %q, stderr\n%s\nwant\n%s", code, out.String(), errb.String(), want)
	}

	secured := write("secured.yaml", "listen: \":9100\"\nweb:\n  config-file: "+web+"\n")
	out.Reset()
	errb.Reset()
	if code := run([]string{"config", "check", secured}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "web:\n  config-file: "+web+"\n") {
		t.Errorf("with basic auth: exit %d\n%s%s", code, out.String(), errb.String())
	}

	broken := write("broken.yml", "basic_auth_users:\n  prometheus: not-a-hash\n")
	brokenCfg := write("broken.yaml", "web:\n  config-file: broken.yml\n")
	out.Reset()
	errb.Reset()
	if code := run([]string{"config", "check", brokenCfg}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "web.config-file: "+broken+": ") ||
		!strings.HasSuffix(errb.String(), "flowmon config: "+brokenCfg+": 1 file it names with errors\n") {
		t.Errorf("a broken web config file: exit %d: %s", code, errb.String())
	}

	// run refuses before it opens anything, as it does bad settings (exit
	// 2), the flags over the file: the file's address with no web config.
	out.Reset()
	errb.Reset()
	if code := run([]string{"run", "--config", open, "--iface", "lo"}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), "(web.config-file, --web.config.file)") {
		t.Errorf("run: exit %d: %s", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"run", "--iface", "lo", "--listen", "0.0.0.0:9100"}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), `"0.0.0.0:9100" is reachable beyond this host`) {
		t.Errorf("run --listen 0.0.0.0:9100: exit %d: %s", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"replay", "--listen", ":0", sample}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), `":0" is reachable beyond this host`) {
		t.Errorf("replay --listen :0: exit %d: %s", code, errb.String())
	}
}

// TestConfigCheckWarnsOfMissingInterface: an interface this machine does
// not have (yet) is a warning, not an error: it may be made later.
func TestConfigCheckWarnsOfMissingInterface(t *testing.T) {
	dir := t.TempDir()
	for iface, warn := range map[string]bool{"fm-nosuch0": true, "lo": false} {
		f := filepath.Join(dir, iface+".yaml")
		if err := os.WriteFile(f, []byte("interface: "+iface+"\nrules: none\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		if code := run([]string{"config", "check", f}, &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d: %s", iface, code, errb.String())
		}
		if got := strings.Contains(errb.String(), `warning: interface "`+iface+`" is not in this network namespace`); got != warn {
			t.Errorf("interface %s: warned %v, want %v: %q", iface, got, warn, errb.String())
		}
	}
}

// TestRunConfigExample: the config docs/run.md offers to copy is one
// config check takes (its settings; the machine it names is the
// reader's).
func TestRunConfigExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/run.md")
	if err != nil {
		t.Fatal(err)
	}
	const start = "```yaml\n# /etc/flowmon/flowmon.yaml\n"
	_, rest, ok := strings.Cut(string(doc), start)
	if !ok {
		t.Fatalf("docs/run.md has no block starting %q", start)
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("the example's block does not end")
	}
	f := filepath.Join(t.TempDir(), "flowmon.yaml")
	if err := os.WriteFile(f, []byte(block), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"config", "--offline", "check", f}, &out, &errb); code != 0 {
		t.Fatalf("config check of the example: exit %d: %s", code, errb.String())
	}
	c, err := config.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	if c.Interface != "eth0" || c.Snapshot.Path == "" || c.FlowLog == "" || len(c.Export.IPFIX.Collectors) != 1 {
		t.Errorf("the example gives %+v: want an interface, a snapshot, a flow log and a collector", c)
	}
}
