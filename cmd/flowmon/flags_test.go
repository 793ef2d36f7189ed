package main

import (
	"bytes"
	"encoding/json"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/flowmon/flowmon/agent"
	"github.com/flowmon/flowmon/internal/yamlnode"
	"github.com/flowmon/flowmon/pipeline"
)

const sample = "../../pcaps/sample.pcap"

// TestReplayRejectsBadSettings: every rejected setting exits 2, prints
// nothing on stdout, and names the flag, the value and what it may be.
func TestReplayRejectsBadSettings(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"--capacity", "0"}, "--capacity 0: must be between 1 and 67108864"},
		{[]string{"--capacity", "-5"}, "--capacity -5: must be between 1 and"},
		{[]string{"--capacity", "x"}, `invalid value "x" for flag -capacity`},
		{[]string{"--max-flows", "0"}, "--max-flows 0: must be between 1 and"},
		{[]string{"--max-flows", "-1"}, "--max-flows -1: must be between 1 and"},
		{[]string{"--workers", "0"}, "--workers 0: must be between 1 and 256"},
		{[]string{"--workers", "-2"}, "--workers -2: must be between 1 and 256"},
		{[]string{"--p", "0"}, "--p 0: must be above 0 and below 1"},
		{[]string{"--p", "1.5"}, "--p 1.5: must be above 0 and below 1"},
		{[]string{"--retrans-window", "-5s"}, "--retrans-window -5s: must be between 0 (off) and 1m0s"},
		{[]string{"--dedup-window", "-1ms"}, "--dedup-window -1ms: must be above 0 and at most 10s"},
		{[]string{"--dedup-window", "0"}, "--dedup-window 0s: must be above 0"},
		{[]string{"--backend", "btree"}, `--backend "btree": must be kbf, sbf, fcf, exact or dleft`},
		{[]string{"--kbf-layout", "diagonal"}, `--kbf-layout "diagonal": must be standard or blocked`},
		{[]string{"--kbf-layout", "blocked", "--backend", "sbf"}, "--kbf-layout blocked: does nothing with --backend sbf"},
		{[]string{"--backend", "exact", "--kbf-encoder", "greedy"}, "--kbf-encoder greedy: does nothing with --backend exact"},
		{[]string{"--no-dedup", "--retrans-window", "1s"}, "--retrans-window 1s: does nothing with --no-dedup"},
		{[]string{"--decode-only", "--workers", "2"}, "--workers 2: does nothing with --decode-only"},
		{[]string{"--linger"}, "--linger does nothing without --listen"},
		{[]string{"--web.enable-lifecycle"}, "--web.config.file and --web.enable-lifecycle do nothing without --listen"},
		{[]string{"--json", "--flows-out", "-"}, "--flows-out - and --json both write to stdout"},
		{[]string{"--decode-only", "--flows-out", "x"}, "--flows-out does nothing with --decode-only"},
		{[]string{"--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"--listen", "0.0.0.0:9200"}, `listen: "0.0.0.0:9200" is reachable beyond this host`},
		// Every error is reported, not only the first.
		{[]string{"--capacity", "0", "--workers", "0"}, "--capacity 0: must be between 1 and 67108864 (expected concurrent flows)\nflowmon replay: --workers 0: must be"},
	} {
		var out, errb bytes.Buffer
		code := run(append(append([]string{"replay"}, c.args...), sample), &out, &errb)
		if code != 2 || out.Len() > 0 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("replay %v: exit %d, stdout %q, stderr %q; want exit 2, no stdout, stderr with %q",
				c.args, code, out.String(), errb.String(), c.want)
		}
	}
}

// TestReplayUnreadableInputSaysItOnce: a capture that cannot be opened
// gives its error alone, once, and no summary.
func TestReplayUnreadableInputSaysItOnce(t *testing.T) {
	for _, args := range [][]string{{"replay", "/nonexistent.pcap"}, {"replay", "--json", "/nonexistent.pcap"}} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		want := "flowmon replay: open capture: open /nonexistent.pcap: no such file or directory\n"
		if code != 1 || out.Len() > 0 || errb.String() != want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1, no stdout, stderr %q", args, code, out.String(), errb.String(), want)
		}
	}
}

// TestHelp: `flowmon help CMD` and `CMD -h` print the command's usage,
// starting "usage: flowmon CMD", and exit 0; eval -h lists evaluations.
func TestHelp(t *testing.T) {
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	for n := range evals {
		names = append(names, "eval "+n)
	}
	for _, n := range names {
		name := strings.Fields(n)
		var out, errb bytes.Buffer
		if code := run(append([]string{"help"}, name...), &out, &errb); code != 0 ||
			!strings.HasPrefix(out.String(), "usage: flowmon "+name[0]) {
			t.Errorf("help %s: exit %d, stdout %q, stderr %q", n, code, out.String(), errb.String())
		}
		out.Reset()
		errb.Reset()
		if code := run(append(name, "-h"), &out, &errb); code != 0 || errb.Len() > 0 ||
			!strings.HasPrefix(out.String(), "usage: flowmon "+n) {
			t.Errorf("%s -h: exit %d, stdout %q, stderr %q", n, code, out.String(), errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"eval", "-h"}, &out, &errb); code != 0 {
		t.Errorf("eval -h: exit %d", code)
	}
	for n := range evals {
		if !strings.Contains(out.String(), "\n  "+n+" ") {
			t.Errorf("eval -h does not list %s:\n%s", n, out.String())
		}
	}
}

// TestSettingsAreReplayFlags: every engine setting is a replay flag of
// the same name and default, so the command line and the agent's config
// file (the settings' yaml keys) speak one language.
func TestSettingsAreReplayFlags(t *testing.T) {
	var errb bytes.Buffer
	f, err := parseReplayFlags([]string{"x.pcap"}, &errb)
	if err != nil {
		t.Fatal(err, errb.String())
	}
	if def := pipeline.DefaultSettings(); !reflect.DeepEqual(f.settings, def) {
		t.Errorf("replay without flags has settings %+v, the engine's defaults are %+v", f.settings, def)
	}
	typ := reflect.TypeFor[pipeline.Settings]()
	fields := yamlnode.Fields(typ)
	if len(fields) != typ.NumField() {
		t.Errorf("%d of the %d settings have a yaml key", len(fields), typ.NumField())
	}
	for _, fld := range fields {
		name := fld.Key
		errb.Reset()
		if _, err := parseReplayFlags([]string{"-h"}, &errb); err != errHelp {
			t.Fatal(err)
		}
		if !strings.Contains(errb.String(), "\n  -"+name+" ") && !strings.Contains(errb.String(), "\n  -"+name+"\n") {
			t.Errorf("setting %s (field %s) is not a replay flag", name, typ.Field(fld.Index).Name)
		}
	}
}

// TestReplayProfile: --profile zeek sets its settings below the flags
// given, in either order: --verify-checksums=false beside it is Zeek's -C.
func TestReplayProfile(t *testing.T) {
	for _, args := range [][]string{{"--profile", "zeek", "--verify-checksums=false", "x.pcap"},
		{"--verify-checksums=false", "--profile", "zeek", "x.pcap"}} {
		var errb bytes.Buffer
		f, err := parseReplayFlags(args, &errb)
		if err != nil {
			t.Fatal(err, errb.String())
		}
		if s := f.settings; !s.NoDedup || s.VerifyChecksums || s.Profile != pipeline.ProfileZeek {
			t.Errorf("%q: no-dedup %v, verify-checksums %v, profile %q", args, s.NoDedup, s.VerifyChecksums, s.Profile)
		}
	}
	var errb bytes.Buffer
	if _, err := parseReplayFlags([]string{"--profile", "suricata", "x.pcap"}, &errb); err == nil || !strings.Contains(errb.String(), `--profile "suricata": must be zeek`) {
		t.Errorf("--profile suricata: %v, %s", err, errb.String())
	}
}

// TestReplayWarnsOverCapacity: the text summary shows the ACSM's own
// measured error, and a replay with --capacity far below the trace's
// concurrent flows warns on stderr; one sized for it does not.
func TestReplayWarnsOverCapacity(t *testing.T) {
	trace := t.TempDir() + "/g.pcap"
	var out, errb bytes.Buffer
	if code := run([]string{"gen", "-o", trace, "--flows", "8000", "--duration", "5s", "--seed", "7"}, &out, &errb); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, errb.String())
	}
	for _, c := range []struct {
		capacity string
		warn     bool
	}{{"200", true}, {"262144", false}} {
		out.Reset()
		errb.Reset()
		if code := run([]string{"replay", "--capacity", c.capacity, trace}, &out, &errb); code != 0 {
			t.Fatalf("replay --capacity %s: exit %d: %s", c.capacity, code, errb.String())
		}
		if !strings.Contains(out.String(), "\nacsm error ") {
			t.Errorf("--capacity %s: the summary has no acsm error line:\n%s", c.capacity, out.String())
		}
		warned := strings.Contains(errb.String(), `msg="summary warning" warning="the ACSM's measured error`)
		above := strings.Contains(out.String(), "ABOVE TARGET")
		if warned != c.warn || above != c.warn {
			t.Errorf("--capacity %s: warned %v, ABOVE TARGET %v, want %v\nstdout:\n%s\nstderr:\n%s",
				c.capacity, warned, above, c.warn, out.String(), errb.String())
		}
	}
	// The sample replays in well under the time a rate needs.
	out.Reset()
	if code := run([]string{"replay", sample}, &out, &errb); code != 0 || !strings.Contains(out.String(), "too short for a meaningful packet rate") {
		t.Errorf("replay of the sample: exit %d, summary:\n%s", code, out.String())
	}
}

// TestFlagsAfterArguments: flags may follow the arguments, as people type
// them; "--" ends the flags.
func TestFlagsAfterArguments(t *testing.T) {
	var before, after, errb bytes.Buffer
	if code := run([]string{"replay", "--json", "--workers", "1", sample}, &before, &errb); code != 0 {
		t.Fatalf("replay --workers 1 FILE: exit %d: %s", code, errb.String())
	}
	if code := run([]string{"replay", sample, "--json", "--workers", "1"}, &after, &errb); code != 0 {
		t.Fatalf("replay FILE --workers 1: exit %d: %s", code, errb.String())
	}
	var a, b pipeline.Summary
	if err := json.Unmarshal(before.Bytes(), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(after.Bytes(), &b); err != nil {
		t.Fatal(err)
	}
	if a.Workers != 1 || b.Workers != 1 || a.Flows != b.Flows || a.Packets != b.Packets {
		t.Errorf("flags before the file: %d workers, %d flows; after: %d workers, %d flows", a.Workers, a.Flows, b.Workers, b.Flows)
	}
	errb.Reset()
	if code := run([]string{"replay", "--json", "--", sample, "--workers"}, &bytes.Buffer{}, &errb); code == 0 || !strings.Contains(errb.String(), "--workers") {
		t.Errorf("replay -- FILE --workers: exit %d, stderr %q; want --workers read as a file", code, errb.String())
	}
}

// TestHelpOnStdout: a command's usage asked for, before or after its
// arguments, is printed on stdout with exit status 0, as `help CMD` does.
func TestHelpOnStdout(t *testing.T) {
	for _, args := range [][]string{
		{"rules", "check", "--help"}, {"rules", "test", "--help"}, {"rules", "show", "--help"},
		{"rules", "-h"}, {"replay", "--help"}, {"replay", sample, "-h"}, {"run", "--help"},
		{"config", "check", "--help"}, {"version", "--help"}, {"help", "replay"},
	} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		if code != 0 || errb.Len() > 0 || !strings.HasPrefix(out.String(), "usage: flowmon "+args[0]) && args[0] != "help" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want the usage on stdout, exit 0", args, code, firstLine(out.String()), errb.String())
		}
	}
}

// TestVersion: flowmon version says what flowmon_build_info says.
func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"version"}, &out, &errb); code != 0 {
		t.Fatalf("version: exit %d: %s", code, errb.String())
	}
	b := agent.Build()
	if !strings.HasPrefix(out.String(), "flowmon version "+b.Version+", revision "+b.Revision) || !strings.Contains(out.String(), runtime.Version()) {
		t.Errorf("version printed %q; the build is %+v", out.String(), b)
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// TestReplayWarnsACSMOverload: an ACSM whose table is full refuses and
// sheds flows, which changes the flows and conn_states whatever its
// shadow measured on a handful of checks: the replay warns, and the
// shadow's line states how little its checks can tell.
func TestReplayWarnsACSMOverload(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"replay", "--capacity", "2", sample}, &out, &errb); code != 0 {
		t.Fatalf("replay --capacity 2: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), `msg="summary warning" warning="the ACSM's table was full`) {
		t.Errorf("no overload warning on stderr:\n%s", errb.String())
	}
	if strings.Contains(out.String(), ": within target") || !strings.Contains(out.String(), "at 95% confidence") {
		t.Errorf("the acsm error line does not state its checks' confidence:\n%s", out.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"replay", sample}, &out, &errb); code != 0 || strings.Contains(errb.String(), "warning") {
		t.Errorf("replay of the sample at the default capacity: exit %d, stderr:\n%s", code, errb.String())
	}
}
