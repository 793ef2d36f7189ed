package acsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/gen/snapshottest"
	"github.com/flowmon/flowmon/internal/snapshot"
	"github.com/flowmon/flowmon/kbf"
)

// stateTrace is a 2000-flow gen trace over 20 s: about 30,000 packets.
func stateTrace(t testing.TB) []capture.Packet {
	return snapshottest.Trace(t, 2000, 20*time.Second, 0, 5)
}

// stateConfigs are the configurations whose restore is checked: every
// backend with short timeouts (the rings rotate and dleft's cells expire
// on both sides of the snapshot) and a capacity below the trace's
// concurrent flows (inserts fail, don't-knows and false positives
// happen), and the settings that change what the store holds.
func stateConfigs() []Config {
	to := Timeouts{New: 2 * time.Second, Established: 6 * time.Second, Closed: time.Second}
	var cs []Config
	for _, b := range []BackendKind{BackendDLeft, BackendKBF, BackendSBF, BackendFCF, BackendExact} {
		cs = append(cs, Config{Backend: b, Capacity: 60, FPRate: 0.01, Timeouts: to, ExactCap: 50, ShadowRate: 4, Seed: 3})
	}
	return append(cs,
		Config{Backend: BackendDLeft, Capacity: 40, FPRate: 0.01, Timeouts: to, ShedNew: true, KeepEnded: true, ShadowRate: 8},
		Config{Backend: BackendKBF, Capacity: 800, FPRate: 0.01, NoAging: true, KBFEncoder: kbf.Sidon, KBFLayout: kbf.Blocked},
		Config{Backend: BackendSBF, Capacity: 800, FPRate: 0.01, NoAging: true, KeepEnded: true, MemoryBytes: 2000},
		Config{Backend: BackendFCF, Capacity: 800, FPRate: 0.01, NoAging: true, MemoryBytes: 1000},
		Config{Backend: BackendDLeft, Capacity: 800, FPRate: 0.01, NoAging: true, Machine: MachineFlags},
	)
}

func configName(c Config) string {
	return fmt.Sprintf("%s/cap%d/noaging=%t/keep=%t/shed=%t/%s", c.Backend, c.Capacity, c.NoAging, c.KeepEnded, c.ShedNew, c.Machine)
}

// TestRestoreContinues: a tracker snapshotted in the middle of a trace
// and restored into a fresh one goes on exactly as the original: the same
// event for every later packet, the same counts and statistics, the same
// state bytes at the end.
func TestRestoreContinues(t *testing.T) {
	ps := stateTrace(t)
	half := len(ps) / 2
	for _, cfg := range stateConfigs() {
		t.Run(configName(cfg), func(t *testing.T) {
			orig, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i := range ps[:half] {
				orig.Observe(&ps[i])
			}
			state, err := orig.AppendState(nil)
			if err != nil {
				t.Fatal(err)
			}
			rest, _ := New(cfg)
			if err := rest.RestoreState(state); err != nil {
				t.Fatal(err)
			}
			again, _ := rest.AppendState(nil)
			if !bytes.Equal(again, state) {
				t.Fatal("the restored tracker's state differs from the one it was restored from")
			}
			if !reflect.DeepEqual(orig.Stats(), rest.Stats()) || !reflect.DeepEqual(orig.Counts(), rest.Counts()) {
				t.Errorf("right after restore:\n%+v\n%+v", orig.Stats(), rest.Stats())
			}
			for i := half; i < len(ps); i++ {
				a, b := orig.Observe(&ps[i]), rest.Observe(&ps[i])
				if a != b {
					t.Fatalf("packet %d: original %+v, restored %+v", i, a, b)
				}
			}
			end := ps[len(ps)-1].Timestamp.Add(5 * time.Second)
			orig.Flush(end)
			rest.Flush(end)
			if a, b := orig.Stats(), rest.Stats(); !reflect.DeepEqual(a, b) {
				t.Errorf("stats:\noriginal %+v\nrestored %+v", a, b)
			}
			if a, b := orig.Counts(), rest.Counts(); !reflect.DeepEqual(a, b) {
				t.Errorf("counts:\noriginal %+v\nrestored %+v", a, b)
			}
			sa, _ := orig.AppendState(nil)
			sb, _ := rest.AppendState(nil)
			if !bytes.Equal(sa, sb) {
				t.Error("final states differ")
			}
			st := orig.Stats()
			t.Logf("%d packets, state %d bytes at the middle; %d flows, %d live, %d expired, %d insert failures, %d decode failures, %d shed, %d don't know, %d unknown; shadow %d checks, %d fp, %d fn, %d wrong",
				len(ps), len(state), orig.Counts().NewFlows, st.LiveFlows, st.Expired, st.InsertFailures, st.DecodeFailures, st.Shed, st.DontKnow,
				orig.Counts().Unknown, st.Shadow.Checks, st.Shadow.FalsePositives, st.Shadow.FalseNegatives, st.Shadow.WrongState)
			if st.Expired == 0 && !cfg.NoAging {
				t.Error("nothing expired: the test does not exercise aging")
			}
		})
	}
}

// TestRestoreRefusesOtherShape: a state restored into a tracker built
// with another configuration is refused with the parameter that differs,
// and the tracker stays empty.
func TestRestoreRefusesOtherShape(t *testing.T) {
	base := Config{Backend: BackendDLeft, Capacity: 65536, FPRate: 0.001}
	tr, _ := New(base)
	ps := stateTrace(t)
	for i := range ps[:1000] {
		tr.Observe(&ps[i])
	}
	state, _ := tr.AppendState(nil)
	for _, tc := range []struct {
		change func(*Config)
		msg    string
	}{
		{func(c *Config) { c.Capacity = 131072 }, "snapshot has capacity 65536, configured 131072"},
		{func(c *Config) { c.Backend = BackendKBF }, "snapshot has backend dleft, configured kbf"},
		{func(c *Config) { c.Timeouts.New = time.Minute + time.Second }, "snapshot has timeout_new 1m0s, configured 1m1s"},
		{func(c *Config) { c.Machine = MachineFlags }, "snapshot has machine zeek, configured flags"},
		{func(c *Config) { c.Seed = 1 }, "snapshot has seed 0, configured 1"},
		{func(c *Config) { c.ShadowRate = -1 }, "snapshot has shadow_rate 1024, configured 0"},
	} {
		cfg := base
		tc.change(&cfg)
		other, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		empty, _ := other.AppendState(nil)
		err = other.RestoreState(state)
		if !errors.Is(err, snapshot.ErrIncompatible) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("restore into %s: %v, want %q", configName(cfg), err, tc.msg)
		}
		if after, _ := other.AppendState(nil); !bytes.Equal(after, empty) {
			t.Errorf("restore into %s failed but changed the tracker", configName(cfg))
		}
	}
}

// TestRestoreRefusesDamage: a cut or flipped state is refused as damaged
// and leaves the tracker as it was.
func TestRestoreRefusesDamage(t *testing.T) {
	cfg := Config{Backend: BackendDLeft, Capacity: 1000, FPRate: 0.001}
	tr, _ := New(cfg)
	ps := stateTrace(t)
	for i := range ps[:3000] {
		tr.Observe(&ps[i])
	}
	state, _ := tr.AppendState(nil)
	fresh, _ := New(cfg)
	empty, _ := fresh.AppendState(nil)
	for _, n := range []int{0, 10, len(state) / 2, len(state) - 1} {
		if err := fresh.RestoreState(state[:n]); !errors.Is(err, snapshot.ErrDamaged) {
			t.Errorf("restore of %d of %d bytes: %v", n, len(state), err)
		}
	}
	if err := fresh.RestoreState(append(bytes.Clone(state), 0)); !errors.Is(err, snapshot.ErrDamaged) {
		t.Errorf("restore with a trailing byte: %v", err)
	}
	if after, _ := fresh.AppendState(nil); !bytes.Equal(after, empty) {
		t.Error("refused restores changed the tracker")
	}
}

// TestRestoreRefusesForgedCounters: the counters a state holds beside
// its stores (the stores' statistics, memory, live flows) are what the
// stores give; a state where one of them is off by one is refused as
// damaged, since the tracker would otherwise hold a count it replaces at
// the next publish and encode to other bytes.
func TestRestoreRefusesForgedCounters(t *testing.T) {
	for _, cfg := range fuzzConfigs() {
		tr, state := fuzzSeed(t, cfg)
		d := snapshot.NewDecoder("test", state)
		d.Tag(trackerTag, trackerState)
		d.Params(tr.stateParams())
		at := len(state) - d.Left() + 8*int(tallyFields)
		for k, name := range derivedNames {
			forged := bytes.Clone(state)
			off := at + 8*k
			binary.LittleEndian.PutUint64(forged[off:], binary.LittleEndian.Uint64(forged[off:])+1)
			fresh, _ := New(cfg)
			err := fresh.RestoreState(forged)
			if !errors.Is(err, snapshot.ErrDamaged) || !strings.Contains(err.Error(), name+" ") {
				t.Errorf("%s: %s one more: %v", cfg.Backend, name, err)
			}
		}
	}
}

// TestStateSizes logs each backend's state at the replay's default
// capacity (2^18 flows).
func TestStateSizes(t *testing.T) {
	for _, b := range []BackendKind{BackendDLeft, BackendKBF, BackendSBF, BackendFCF, BackendExact} {
		tr, err := New(Config{Backend: b, Capacity: 1 << 18, FPRate: 0.001})
		if err != nil {
			t.Fatal(err)
		}
		s, err := tr.AppendState(nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s at capacity 2^18: state %d bytes (empty), backend memory %d bytes", b, len(s), tr.Stats().MemoryBytes)
	}
}

// fuzzConfigs are small trackers, one per backend, for FuzzRestoreState.
func fuzzConfigs() []Config {
	to := Timeouts{New: 2 * time.Second, Established: 6 * time.Second, Closed: time.Second}
	var cs []Config
	for _, b := range []BackendKind{BackendDLeft, BackendKBF, BackendSBF, BackendFCF, BackendExact} {
		cs = append(cs, Config{Backend: b, Capacity: 16, FPRate: 0.1, Timeouts: to, ExactCap: 32, ShadowRate: 4})
	}
	return cs
}

// fuzzSeed is a tracker of cfg after the trace's first 200 packets, and
// its state: FuzzRestoreState's seed for cfg.
func fuzzSeed(tb testing.TB, cfg Config) (*Tracker, []byte) {
	tb.Helper()
	ps := stateTrace(tb)
	tr, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	for i := range ps[:200] {
		tr.Observe(&ps[i])
	}
	s, err := tr.AppendState(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return tr, s
}

// FuzzRestoreState: no input makes RestoreState panic; a refused input
// leaves the tracker unchanged; an accepted one encodes back to itself
// and the tracker then runs packets without panicking. The seeds are
// real states of every backend.
func FuzzRestoreState(f *testing.F) {
	ps := stateTrace(f)
	cfgs := fuzzConfigs()
	for k, cfg := range cfgs {
		_, s := fuzzSeed(f, cfg)
		f.Add(uint8(k), s)
	}
	f.Fuzz(func(t *testing.T, k uint8, b []byte) {
		cfg := cfgs[int(k)%len(cfgs)]
		tr, _ := New(cfg)
		if !snapshottest.CheckRestore(t, tr, b) {
			return
		}
		for i := range ps[200:400] {
			tr.Observe(&ps[200+i])
		}
	})
}

// BenchmarkState is AppendState and RestoreState of FuzzRestoreState's
// seeds: a fuzzer runs both several times an input, so their fixed cost
// (the params) sets its rate. docs/results/fuzz-restore.md has figures.
func BenchmarkState(b *testing.B) {
	for _, cfg := range fuzzConfigs() {
		tr, s := fuzzSeed(b, cfg)
		b.Run(cfg.Backend.String()+"/append", func(b *testing.B) {
			b.ReportAllocs()
			buf := s[:0:0]
			for b.Loop() {
				buf, _ = tr.AppendState(buf[:0])
			}
		})
		b.Run(cfg.Backend.String()+"/restore", func(b *testing.B) {
			x, _ := New(cfg)
			b.ReportAllocs()
			for b.Loop() {
				if err := x.RestoreState(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
