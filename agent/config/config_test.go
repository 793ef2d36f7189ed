package config

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/yamlnode"
	"github.com/flowmon/flowmon/pipeline/hostpairs"
)

// TestSettingsCoverFields: the table of keys sets every leaf field of
// Config, each once (a field added without its key would be neither
// parsed, written nor compared at reload).
func TestSettingsCoverFields(t *testing.T) {
	var leaves func(v reflect.Value) []uintptr
	leaves = func(v reflect.Value) []uintptr {
		if v.Kind() != reflect.Struct || v.Type() == durationType {
			return []uintptr{v.Addr().Pointer()}
		}
		var out []uintptr
		for i := range v.NumField() {
			out = append(out, leaves(v.Field(i))...)
		}
		return out
	}
	var c Config
	want := map[uintptr]bool{}
	for _, p := range leaves(reflect.ValueOf(&c).Elem()) {
		want[p] = true
	}
	got := map[uintptr]string{}
	for _, s := range settings {
		p := s.field(&c).Addr().Pointer()
		if k, dup := got[p]; dup {
			t.Errorf("%s and %s set the same field", k, s.key)
		}
		got[p] = s.key
	}
	if len(got) != len(want) {
		t.Errorf("%d keys for %d fields", len(got), len(want))
	}
	// Every kind of field has a decoder and an encoder (a sequence's
	// decoder is the parser's: TestWatchlists).
	d := Default()
	for _, s := range settings {
		if s.seq {
			continue
		}
		v := encode(s.field(&d), s.size)
		if msg := decode(s.field(&c), v, s.size); msg != "" {
			t.Errorf("%s: %s", s.key, msg)
		}
	}
}

// TestSet: flags override the file with the same checks, and their
// errors name the flag; a refused flag leaves the configuration.
func TestSet(t *testing.T) {
	c, err := Load("testdata/full.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ name, value string }{
		{"iface", "eth1"}, {"source", "afpacket"}, {"workers", "2"}, {"listen", ":0"},
		{"snapshot", "state.snap"}, {"user", "65534"}, {"afpacket.block-size", "64KiB"}, {"afpacket.frame-size", "8KiB"},
		{"stop-timeout", "1m"}, {"rules", "none"}, {"p", "0.01"},
		{"watchlist", "blocked=other.txt"}, {"watchlist", "new=new.txt"}, {"watchlist-dir", "wl"},
		{"history-dir", "hist"}, {"history-horizon", "24h"}, {"history-ram", "32MiB"},
	} {
		if err := c.Set(f.name, f.value); err != nil {
			t.Errorf("--%s %s: %v", f.name, f.value, err)
		}
	}
	if c.Interface != "eth1" || c.Source != SourceAFPacket || c.Pipeline.Workers != 2 || c.Listen != ":0" ||
		c.Snapshot.Path != abs(t, "state.snap") || c.User != "65534" || c.AFPacket.BlockSize != 64<<10 ||
		c.StopTimeout != time.Minute || c.Rules != RulesNone || c.Pipeline.P != 0.01 {
		t.Errorf("after the flags: %+v", c)
	}
	// --watchlist sets its list's file, in the file's place, or adds it.
	if want := (Watchlists{Dir: abs(t, "wl"), Lists: []Watchlist{{"blocked", abs(t, "other.txt")},
		{"scanners.v6", abs(t, "testdata/ref/scanners.txt")}, {"new", abs(t, "new.txt")}}}); !reflect.DeepEqual(c.Watchlists, want) {
		t.Errorf("watchlists after the flags: %+v", c.Watchlists)
	}
	if want := (History{Dir: abs(t, "hist"), Horizon: 24 * time.Hour, RAM: 32 << 20}); c.History != want {
		t.Errorf("history after the flags: %+v", c.History)
	}
	before := c
	before.Watchlists.Lists = slices.Clone(c.Watchlists.Lists) // a change in place would show
	for _, tc := range []struct{ name, value, want string }{
		{"workers", "0", "--workers: 0 must be between 1 and 256"},
		{"workers", "two", `--workers: want an integer, got "two"`},
		{"iface", "a/b", `--iface: "a/b" is not an interface name`},
		{"source", "netmap", `--source: "netmap" must be afpacket, pcap, xdp or tc`},
		{"listen", "localhost", `--listen: "localhost" must be host:port`},
		{"user", "-x", `--user: "-x" is not a user name`},
		{"stop-timeout", "1h", "--stop-timeout: 1h must be between 1s and 5m"},
		{"watchlist", "blocked", `--watchlist: want NAME=FILE, got "blocked"`},
		{"watchlist", "a/b=x.txt", `--watchlist: "a/b" is not a watchlist name`},
		{"watchlist", "=x.txt", "--watchlist: missing or empty: the name watchlist rules give the list"},
		{"watchlist", "blocked=", "--watchlist: missing or empty: the list's text file"},
		{"history-horizon", "-1s", "--history-horizon: -1s must be 0 (for ever) or more"},
		{"history-ram", "16", "--history-ram: 16 must be between 64KiB and 1TiB"},
		{"history-ram", "16M", `--history-ram: bad size "16M"`},
		// A flag breaks a rule that spans keys: the other key is named too.
		{"afpacket.block-size", "4KiB", "afpacket.frame-size: 8KiB must be a multiple of 16 from 128 to block-size (4KiB)"},
	} {
		err := c.Set(tc.name, tc.value)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("--%s %s: %v, want %q", tc.name, tc.value, err, tc.want)
		}
		if !reflect.DeepEqual(c, before) {
			t.Errorf("--%s %s: refused but changed the configuration", tc.name, tc.value)
		}
	}
	// A setting the file made inert, given by a flag.
	d, err := Load("testdata/decodeonly.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Set("workers", "2"); err == nil || err.Error() != "--workers: 2 does nothing with decode-only (no stage runs)" {
		t.Errorf("--workers with decode-only: %v", err)
	}
	if err := d.Set("threads", "2"); err == nil || errors.Is(err, ErrInvalid) {
		t.Errorf("an unknown flag: %v", err)
	}
	if err := d.Set("flow-log", "-"); err != nil || d.FlowLog != "-" {
		t.Errorf("--flow-log -: %v, %q", err, d.FlowLog)
	}
}

// TestReloadable: the rules reload; any other change, the alert sinks
// included, needs a restart, named, and the running configuration stays.
func TestReloadable(t *testing.T) {
	running := Default()
	next := running
	next.Rules = "/etc/flowmon/rules.yaml"
	changed, err := running.Reloadable(next)
	if err != nil || !reflect.DeepEqual(changed, []string{"rules"}) || !reflect.DeepEqual(running, next) {
		t.Errorf("rules: %v, %v", changed, err)
	}
	changed, err = running.Reloadable(next)
	if err != nil || changed != nil {
		t.Errorf("no change: %v, %v", changed, err)
	}
	again := next
	again.Rules, again.Alerting = RulesNone, "/etc/flowmon/alerting.yaml"
	again.Interface, again.Pipeline.Workers, again.AFPacket.BlockCount = "eth9", 7, 8
	again.Watchlists.Lists = []Watchlist{{"a", "/a.txt"}}
	changed, err = running.Reloadable(again)
	want := []string{"interface", "afpacket.block-count", "pipeline.workers", "rules", "alerting", "watchlists.lists"}
	var re *RestartError
	if !reflect.DeepEqual(changed, want) || !errors.As(err, &re) || !errors.Is(err, ErrNeedsRestart) ||
		!reflect.DeepEqual(re.Keys, []string{"interface", "afpacket.block-count", "pipeline.workers", "alerting"}) || !reflect.DeepEqual(running, next) {
		t.Errorf("fixed settings: %v, %v; running %+v", changed, err, running)
	}
	if got := err.Error(); got != "interface, afpacket.block-count, pipeline.workers, alerting changed: only a restart applies them (the running configuration stays)" {
		t.Errorf("message %q", got)
	}
	// The watchlists' lists reload (the agent opens, moves and closes
	// lists: watchlist.Set.Update); where they persist and the flow
	// history are fixed.
	lists := next
	lists.Watchlists.Lists = []Watchlist{{"a", "/a.txt"}, {"b", "/b.txt"}}
	if changed, err := running.Reloadable(lists); err != nil || !reflect.DeepEqual(changed, []string{"watchlists.lists"}) || !reflect.DeepEqual(running, lists) {
		t.Errorf("watchlists.lists: %v, %v", changed, err)
	}
	fixed := lists
	fixed.Watchlists.Dir, fixed.History = "/var/lib/wl", History{Dir: "/h", Horizon: time.Hour, RAM: 1 << 20}
	_, err = running.Reloadable(fixed)
	if !errors.As(err, &re) || !reflect.DeepEqual(re.Keys, []string{"watchlists.dir", "history.dir", "history.horizon", "history.ram"}) {
		t.Errorf("watchlists.dir and history: %v", err)
	}
}

// TestEffective: the written configuration holds every key, the inert
// pipeline settings commented out with why, and refuses an invalid one.
func TestEffective(t *testing.T) {
	out, err := Default().Effective()
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	for _, s := range settings {
		name := s.key[strings.LastIndexByte(s.key, '.')+1:]
		if !strings.Contains(text, name+": ") {
			t.Errorf("no %s in\n%s", s.key, text)
		}
	}
	for _, want := range []string{
		"\nafpacket:\n  block-size: 1MiB\n  block-count: 64\n  frame-size: 2048\n",
		"\npcap:  # not used: source is afpacket\n",
		"\n  # kbf-encoder: sidon  # does nothing with backend dleft (it sets the kbf backend)\n",
		"\nrules: \"\"  # the embedded default rules (flowmon rules show)\n",
		"\n  max-age: 10m\n",
		"\nwatchlists:\n  dir: \"\"  # in memory: each start builds the lists from their files\n  lists: []  # none\n",
		"\nhistory:\n  dir: \"\"  # no flow history: novelty rules never fire\n  horizon: 0s  # for ever\n  ram: 16MiB\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in\n%s", want, text)
		}
	}
	c := Default()
	c.AFPacket.Filter = "4\n40 0 0 12\n21 0 1 2048\n6 0 0 262144\n6 0 0 0\n"
	c.Interface, c.User, c.Rules = "true", "123", RulesNone // strings that look like other types
	c.Watchlists.Lists = []Watchlist{{"true", "/etc/flowmon/a list: #1.txt"}, {"123", "/~"}, {"null", "/[x]"}}
	c.History.RAM = 100 << 10
	roundTrip(t, "filter", c)
	c.AFPacket.BlockCount = 0
	if _, err := c.Effective(); err == nil || err.Error() != "afpacket.block-count: 0 must be between 1 and 65536" {
		t.Errorf("invalid: %v", err)
	}
}

// TestDefaultHistoryRAM: the default is the history's.
func TestDefaultHistoryRAM(t *testing.T) {
	if DefaultHistoryRAM != hostpairs.DefaultOptions.RAMBytes {
		t.Errorf("DefaultHistoryRAM %d, hostpairs.DefaultOptions.RAMBytes %d", DefaultHistoryRAM, hostpairs.DefaultOptions.RAMBytes)
	}
}

func TestFilter(t *testing.T) {
	for _, f := range []string{"", "tcp port 80", "4\n40 0 0 12\n21 0 1 2048\n6 0 0 262144\n6 0 0 0\n", "1,6 0 0 0", "1;6 0 0 0"} {
		if msg := checkFilter(f); msg != "" {
			t.Errorf("checkFilter(%q): %s", f, msg)
		}
	}
	for _, f := range []string{"0", "1\n6 0 0 0 0", "2\n5 0 0 1\n6 0 0 0", "1\n70000 0 0 0", "1\n6 0 256 0", "5000\n6 0 0 0"} {
		if msg := checkFilter(f); !strings.HasPrefix(msg, "tcpdump -ddd program: ") || strings.Contains(msg, "BPF") {
			t.Errorf("checkFilter(%q) = %q", f, msg)
		}
	}
	if !IsBPF("1,6 0 0 0") || IsBPF("tcp port 80") || IsBPF("") || IsBPF(" \n") {
		t.Error("IsBPF")
	}
}

func TestSizeAndDuration(t *testing.T) {
	for s, want := range map[string]int64{"4096": 4096, "1MiB": 1 << 20, "1mib": 1 << 20, "4 KiB": 4096, "1.5KiB": 1536, "1kB": 1000, "2GiB": 2 << 30} {
		if n, err := yamlnode.ParseSize(s); err != nil || n != want {
			t.Errorf("yamlnode.ParseSize(%q) = %d, %v", s, n, err)
		}
	}
	for _, s := range []string{"", "1.1", "1XB", "-1MiB", "1e30TiB", "MiB"} {
		if n, err := yamlnode.ParseSize(s); err == nil {
			t.Errorf("yamlnode.ParseSize(%q) = %d", s, n)
		}
	}
	// parseSize reads back the sizes Effective writes.
	for _, n := range []int64{0, 4096, 1 << 20, 1000, 3 << 30, 1536} {
		if got, err := yamlnode.ParseSize(capture.FormatSize(n)); err != nil || got != n {
			t.Errorf("yamlnode.ParseSize(capture.FormatSize(%d)) = %d, %v", n, got, err)
		}
	}
	for d, want := range map[time.Duration]string{10 * time.Minute: "10m", time.Hour: "1h", 90 * time.Minute: "1h30m", 0: "0s",
		10 * time.Millisecond: "10ms", 61 * time.Second: "1m1s", 3601 * time.Second: "1h0m1s"} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %s", d, got)
		}
	}
}
