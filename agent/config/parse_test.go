package config

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/flowmon/flowmon/bpf/source"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/capture/afpacket"
	"github.com/flowmon/flowmon/conferr"
	"github.com/flowmon/flowmon/internal/testutil/goldentest"
	"github.com/flowmon/flowmon/pipeline"
)

var update = flag.Bool("update", false, "rewrite testdata/*.bad.yaml.golden from the parser's output")

func abs(t testing.TB, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestGoodFiles loads every testdata/*.good.yaml; each is valid, and
// its effective configuration reads back to it.
func TestGoodFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.good.yaml")
	if len(files) < 4 {
		t.Fatalf("testdata/*.good.yaml: %d files", len(files))
	}
	for _, f := range files {
		c, err := Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: parsed but Validate says %v", f, err)
		}
		roundTrip(t, f, c)
	}
}

// roundTrip checks that c's effective configuration parses back to c,
// from another directory too (its paths are absolute).
func roundTrip(t *testing.T, what string, c Config) {
	t.Helper()
	out, err := c.Effective()
	if err != nil {
		t.Errorf("%s: Effective: %v", what, err)
		return
	}
	for _, name := range []string{"effective.yaml", "/elsewhere/effective.yaml"} {
		back, err := Parse(name, out)
		if err != nil {
			t.Errorf("%s: effective configuration does not parse: %v\n%s", what, err, out)
			continue
		}
		if !reflect.DeepEqual(back, c) {
			t.Errorf("%s: effective configuration reads back as\n%+v\nwant\n%+v\n%s", what, back, c, out)
		}
	}
}

// TestFull: every key of full.good.yaml lands in its field, relative
// paths from the file's directory.
func TestFull(t *testing.T) {
	c, err := Load("testdata/full.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Interface: "enp3s0f1",
		Source:    SourcePcap,
		AFPacket: AFPacket{BlockSize: 4 << 20, BlockCount: 128, FrameSize: 4096, BlockTimeout: 50 * time.Millisecond,
			Fanout: afpacket.FanoutCPU, Promisc: false, Filter: "tcp port 443 or udp"},
		Pcap: Pcap{Snaplen: 1500, Promisc: false, Filter: "4\n40 0 0 12\n21 0 1 2048\n6 0 0 262144\n6 0 0 0\n",
			Timeout: 100 * time.Millisecond},
		EBPF: EBPF{XDPMode: source.XDPGeneric, TCMode: source.TCClsact, RingSize: 16 << 20, PollTimeout: 5 * time.Millisecond, Sample: 16,
			CIDRs: "10.0.0.0/8, 2001:db8::/32", Ports: "53, 443"},
		Pipeline: pipeline.Settings{Backend: "kbf", KBFEncoder: "greedy", KBFLayout: "blocked", Machine: "flags",
			Capacity: 1000000, P: 0.0001, DedupWindow: 100 * time.Millisecond, Dedup: "fbf", RetransWindow: 2 * time.Second,
			MaxFlows: 500000, FlowState: pipeline.FlowStateUser, Workers: 3, CommunityIDSeed: 1, ActiveTimeout: 30 * time.Second,
			VXLANPorts: "4789,8472", VXLANGPEPorts: "4790,4791", GenevePorts: "none", GTPPorts: "2152", TeredoPorts: "3544,3545", AYIYAPorts: "none",
			GREOverUDPPorts: "4754,4755", NoTunnelDetect: true, MaxTunnelDepth: 2, VerifyChecksums: true,
			Defrag: true, DefragMaxDatagrams: 2048, DefragMaxBytes: 8 << 20, DefragTimeout: time.Minute, DefragPolicy: "last"},
		Rules:    abs(t, "testdata/ref/rules.yaml"),
		Alerting: abs(t, "testdata/ref/alerting.yaml"),
		Watchlists: Watchlists{Dir: "/var/lib/flowmon/watchlists", Lists: []Watchlist{
			{Name: "blocked", File: abs(t, "testdata/ref/blocked.txt")}, {Name: "scanners.v6", File: abs(t, "testdata/ref/scanners.txt")}}},
		History:         History{Dir: abs(t, "history"), Horizon: 720 * time.Hour, RAM: 64 << 20},
		Listen:          "[::1]:9200",
		Web:             Web{ConfigFile: abs(t, "testdata/ref/web.yml"), EnableLifecycle: true},
		Snapshot:        Snapshot{Path: "/var/lib/flowmon/state.snap", MaxAge: 90 * time.Minute, Interval: 30 * time.Second},
		FlowLog:         abs(t, "testdata/flows.jsonl"),
		FlowLogRotation: Rotation{MaxSize: 1 << 30, MaxAge: 24 * time.Hour, MaxFiles: 30},
		Export: Export{IPFIX: IPFIX{Collectors: []string{"192.0.2.10:4739", "[2001:db8::10]:4739"}, Transport: "tcp",
			Mode: "compat", MTU: 9000, TemplateRefresh: 30 * time.Second, EnterpriseNumber: 32473, ObservationDomain: 7, Queue: 64, Rate: 30000},
			OTLP: OTLP{Endpoint: "https://otel.example.org:4317", Protocol: "grpc", HeadersFile: abs(t, "testdata/ref/otlp-headers"),
				CAFile: abs(t, "testdata/ref/ca.pem"), CertFile: abs(t, "testdata/ref/client.pem"), KeyFile: abs(t, "testdata/ref/client.key"),
				InsecureSkipVerify: true, Body: "connlog", Compression: "none", BatchSize: 512, BatchTimeout: 200 * time.Millisecond, Queue: 1000, Timeout: 30 * time.Second}},
		User:        "flowmon",
		StopTimeout: 30 * time.Second,
		Health:      Health{MaxDropShare: 0.5},
		LogFormat:   LogJSON,
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got\n%+v\nwant\n%+v", c, want)
	}
	// All but the five that exclude the others (no-dedup, decode-only,
	// defrag, whose other keys do nothing when it is false, flow-state,
	// whose kernel needs source xdp or tc and every flow, and profile,
	// which turns no-dedup on: TestProfile).
	if changed, _ := c.Reloadable(Default()); len(changed) != len(settings)-5 {
		t.Errorf("%d keys differ from the defaults, want %d: %v", len(changed), len(settings)-5, changed)
	}
}

func TestSizes(t *testing.T) {
	c, err := Load("testdata/sizes.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a := c.AFPacket
	if a.BlockSize != 256<<10 || a.BlockCount != 16384 || a.FrameSize != 256 || a.BlockTimeout != 20*time.Millisecond {
		t.Errorf("afpacket %+v", a)
	}
	if c.Pcap.Timeout != 20*time.Millisecond || c.Pcap.Snaplen != capture.MaxSnaplen || c.Snapshot != Default().Snapshot {
		t.Errorf("pcap %+v, snapshot %+v", c.Pcap, c.Snapshot)
	}
}

// TestEmpty: no file, an empty file, a null document and a file of
// comments are all the defaults.
func TestEmpty(t *testing.T) {
	for _, data := range []string{"", "\n", "# nothing\n", "~\n", "---\n", "null\n", "watchlists:\n  lists:\n", "watchlists: {lists: []}\n"} {
		c, err := Parse("empty.yaml", []byte(data))
		if err != nil || !reflect.DeepEqual(c, Default()) {
			t.Errorf("Parse(%q) = %+v, %v; want the defaults", data, c, err)
		}
	}
	c, err := Load("")
	if err != nil || !reflect.DeepEqual(c, Default()) {
		t.Errorf("Load(\"\") = %+v, %v; want the defaults", c, err)
	}
	if err := Default().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	roundTrip(t, "defaults", Default())
	if _, err := Load("testdata/no-such.yaml"); !errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrInvalid) {
		t.Errorf("a missing file: %v", err)
	}
}

// TestBadFiles checks that every testdata/*.bad.yaml is refused with
// exactly the messages in its .golden file: each names file:line:col and
// the key, and all of a file's errors come at once.
func TestBadFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.bad.yaml")
	if len(files) == 0 {
		t.Fatal("no testdata/*.bad.yaml")
	}
	for _, f := range files {
		c, err := Load(f)
		if err == nil {
			t.Errorf("%s: parsed without error", f)
			continue
		}
		if !reflect.DeepEqual(c, Config{}) {
			t.Errorf("%s: a configuration with the error: %+v", f, c)
		}
		var e *conferr.Error
		if !errors.As(err, &e) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: error %T is not *conferr.Error: %v", f, err, err)
		}
		goldentest.CheckErrors(t, f, err, *update)
	}
}

// FuzzParse: nothing a file holds makes Parse panic; its errors are
// *conferr.Error; what it accepts is valid and reads back from its effective
// configuration.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, file := range files {
		b, _ := os.ReadFile(file)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse("/fuzz/flowmon.yaml", b)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error without ErrInvalid: %v", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("parsed but invalid: %v", err)
		}
		roundTrip(t, "fuzz", c)
	})
}

// TestProfile: pipeline.profile sets the profile's settings that the file
// does not give; those it gives keep their values (profile.good.yaml is
// Zeek's defaults with its -C).
func TestProfile(t *testing.T) {
	c, err := Load("testdata/profile.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Pipeline; p.Profile != pipeline.ProfileZeek || !p.NoDedup || p.VerifyChecksums {
		t.Errorf("profile zeek with verify-checksums false: no-dedup %v, verify-checksums %v", p.NoDedup, p.VerifyChecksums)
	}
	d := Default()
	if err := d.Set("profile", "zeek"); err != nil {
		t.Fatal(err)
	}
	if !d.Pipeline.NoDedup || !d.Pipeline.VerifyChecksums {
		t.Errorf("--profile zeek: no-dedup %v, verify-checksums %v", d.Pipeline.NoDedup, d.Pipeline.VerifyChecksums)
	}
}
