package dedup

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/gen/snapshottest"
	"github.com/flowmon/flowmon/internal/snapshot"
)

// stateTrace is a 2000-flow gen trace over 20 s with 5% SPAN duplicates.
func stateTrace(t testing.TB) []capture.Packet {
	return snapshottest.Trace(t, 2000, 20*time.Second, 0.05, 5)
}

// stateConfigs are small enough that false positives happen and, with
// the retransmission window, long enough that it matters across the
// snapshot.
func stateConfigs() map[string]Config {
	return map[string]Config{
		"default": {},
		"small":   {Window: 50 * time.Millisecond, PacketsPerWindow: 50, FPRate: 1e-2, FBF: true, Past: 2, Standard: true},
		"fbf":     {FBF: true},
		"retrans": {PacketsPerWindow: 200, FPRate: 1e-3, Retrans: RetransConfig{Enabled: true, Window: 2 * time.Second, FPRate: 1e-2}},
	}
}

// TestRestoreContinues: a Dedup snapshotted in the middle of a trace and
// restored into a fresh one classifies every later packet as the original
// does, and ends with the same counts, statistics and state.
func TestRestoreContinues(t *testing.T) {
	ps := stateTrace(t)
	half := len(ps) / 2
	for name, cfg := range stateConfigs() {
		t.Run(name, func(t *testing.T) {
			orig, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i := range ps[:half] {
				orig.Check(&ps[i])
			}
			state, err := orig.AppendState(nil)
			if err != nil {
				t.Fatal(err)
			}
			rest, _ := New(cfg)
			if err := rest.RestoreState(state); err != nil {
				t.Fatal(err)
			}
			if again, _ := rest.AppendState(nil); !bytes.Equal(again, state) {
				t.Fatal("the restored state differs from the one it was restored from")
			}
			if orig.Stats() != rest.Stats() {
				t.Errorf("right after restore:\n%+v\n%+v", orig.Stats(), rest.Stats())
			}
			for i := half; i < len(ps); i++ {
				if a, b := orig.Check(&ps[i]), rest.Check(&ps[i]); a != b {
					t.Fatalf("packet %d: original %s, restored %s", i, a, b)
				}
			}
			orig.Publish()
			rest.Publish()
			if a, b := orig.Stats(), rest.Stats(); a != b {
				t.Errorf("stats:\noriginal %+v\nrestored %+v", a, b)
			}
			sa, _ := orig.AppendState(nil)
			sb, _ := rest.AppendState(nil)
			if !bytes.Equal(sa, sb) {
				t.Error("final states differ")
			}
			p, dup, re := orig.Counts()
			t.Logf("%d packets: %d duplicates, %d retransmissions; state %d bytes", p, dup, re, len(state))
			if dup == 0 {
				t.Error("no duplicates: the trace does not exercise the window")
			}
		})
	}
}

func TestRestoreRefuses(t *testing.T) {
	ps := stateTrace(t)
	d, _ := New(Config{})
	for i := range ps[:500] {
		d.Check(&ps[i])
	}
	state, _ := d.AppendState(nil)
	for _, tc := range []struct {
		cfg Config
		msg string
	}{
		{Config{Window: 100 * time.Millisecond}, "snapshot has window 50ms, configured 100ms"},
		{Config{PacketsPerWindow: 25000}, "snapshot has packets_per_window 50000, configured 25000"},
		{Config{Retrans: RetransConfig{Enabled: true}}, "snapshot has retrans false, configured true"},
		{Config{FBF: true}, "snapshot has fbf false, configured true"},
	} {
		other, err := New(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		before, _ := other.AppendState(nil)
		err = other.RestoreState(state)
		if !errors.Is(err, snapshot.ErrIncompatible) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.msg)
		}
		if after, _ := other.AppendState(nil); !bytes.Equal(after, before) {
			t.Errorf("%+v: a refused restore changed the stage", tc.cfg)
		}
	}
	fresh, _ := New(Config{})
	for _, n := range []int{0, 7, len(state) / 3, len(state) - 1} {
		if err := fresh.RestoreState(state[:n]); !errors.Is(err, snapshot.ErrDamaged) {
			t.Errorf("%d of %d bytes: %v", n, len(state), err)
		}
	}
	if p, _, _ := fresh.Counts(); p != 0 {
		t.Error("refused restores changed the stage")
	}
}

// TestStateSize logs the state's size at the defaults.
func TestStateSize(t *testing.T) {
	d, _ := New(Config{})
	s, _ := d.AppendState(nil)
	t.Logf("default dedup: state %d bytes, filters %d bytes", len(s), d.MemoryBytes())
}

// FuzzRestoreState: no input makes RestoreState panic; a refused input
// leaves the stage unchanged; an accepted one encodes back to itself and
// the stage then checks packets without panicking.
func FuzzRestoreState(f *testing.F) {
	ps := stateTrace(f)
	cfgs := []Config{
		{Window: 50 * time.Millisecond, PacketsPerWindow: 20, FPRate: 1e-2},
		{Window: 50 * time.Millisecond, PacketsPerWindow: 20, FPRate: 1e-2, FBF: true, Past: 2, Standard: true,
			Retrans: RetransConfig{Enabled: true, Window: time.Second, PacketsPerWindow: 50}},
	}
	for k, cfg := range cfgs {
		d, err := New(cfg)
		if err != nil {
			f.Fatal(err)
		}
		for i := range ps[:300] {
			d.Check(&ps[i])
		}
		s, _ := d.AppendState(nil)
		f.Add(uint8(k), s)
	}
	f.Fuzz(func(t *testing.T, k uint8, b []byte) {
		d, _ := New(cfgs[int(k)%len(cfgs)])
		if !snapshottest.CheckRestore(t, d, b) {
			return
		}
		for i := range ps[300:400] {
			d.Check(&ps[300+i])
		}
		d.Publish()
	})
}
