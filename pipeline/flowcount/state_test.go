package flowcount

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/gen/snapshottest"
	"github.com/flowmon/flowmon/internal/snapshot"
)

// stateTrace is a 2000-flow gen trace over 20 s (about 30,000 packets).
func stateTrace(t testing.TB) []capture.Packet {
	return snapshottest.Trace(t, 2000, 20*time.Second, 0, 5)
}

// sameSnapshot compares two published windows.
func sameSnapshot(t *testing.T, a, b *Snapshot) {
	t.Helper()
	if (a == nil) != (b == nil) {
		t.Fatalf("published window: %v and %v", a, b)
	}
	if a == nil {
		return
	}
	if !a.Start.Equal(b.Start) || !a.End.Equal(b.End) || a.Packets != b.Packets || a.Dropped != b.Dropped || a.Partial != b.Partial {
		t.Errorf("published windows differ: %v..%v %d %d %t, %v..%v %d %d %t", a.Start, a.End, a.Packets, a.Dropped, a.Partial,
			b.Start, b.End, b.Packets, b.Dropped, b.Partial)
	}
	ea, _ := a.Encoded()
	eb, _ := b.Encoded()
	if !bytes.Equal(ea, eb) || a.Filter.Options() != b.Filter.Options() {
		t.Error("published windows' filters differ")
	}
}

// TestRestoreContinues: a Counter snapshotted in the middle of a trace
// (between window rotations) and restored into a fresh one counts every
// later packet as the original does, rotates at the same packets, and
// ends with the same statistics, published window and state. In "full"
// and "onewindow" the filter holds fewer slots than the window's flows,
// so cuckoo kicks, stashing and refusals (Dropped) happen on both sides
// of the snapshot; "onewindow" keeps one window across it, where a
// restore that restarted the kick generator from its seed gives other
// counts (a flow refused by one side and counted by the other).
func TestRestoreContinues(t *testing.T) {
	ps := stateTrace(t)
	half := len(ps) / 2
	for name, o := range map[string]Options{
		"full":      {Window: 5 * time.Second, ExpectedFlows: 300, FPRate: 1e-2, CounterBits: 8, Seed: 4},
		"roomy":     {Window: 7 * time.Second, ExpectedFlows: 5000},
		"onewindow": {Window: time.Minute, ExpectedFlows: 1500, FPRate: 1e-2, CounterBits: 8},
		"defaults":  {},
	} {
		t.Run(name, func(t *testing.T) {
			orig := mustCounter(t, o)
			for i := range ps[:half] {
				orig.Add(ps[i].Hash, ps[i].Timestamp)
			}
			state, err := orig.AppendState(nil)
			if err != nil {
				t.Fatal(err)
			}
			rest := mustCounter(t, o)
			if err := rest.RestoreState(state); err != nil {
				t.Fatal(err)
			}
			if again, _ := rest.AppendState(nil); !bytes.Equal(again, state) {
				t.Fatal("the restored state differs from the one it was restored from")
			}
			if orig.cur.Options() != rest.cur.Options() {
				t.Errorf("filter options %+v, restored %+v", orig.cur.Options(), rest.cur.Options())
			}
			sameSnapshot(t, orig.Last(), rest.Last())
			var dropped uint64
			seen := orig.Last()
			for i := half; i < len(ps); i++ {
				a, b := orig.Add(ps[i].Hash, ps[i].Timestamp), rest.Add(ps[i].Hash, ps[i].Timestamp)
				if a != b {
					t.Fatalf("packet %d: count %d, restored %d", i, a, b)
				}
				if l := orig.Last(); l != seen {
					seen = l
					dropped += l.Dropped
				}
			}
			if a, b := orig.Stats(), rest.Stats(); !reflect.DeepEqual(statsNoTime(a), statsNoTime(b)) || !a.WindowStart.Equal(b.WindowStart) {
				t.Errorf("stats:\noriginal %+v\nrestored %+v", a, b)
			}
			sameSnapshot(t, orig.Last(), rest.Last())
			sa, _ := orig.AppendState(nil)
			sb, _ := rest.AppendState(nil)
			if !bytes.Equal(sa, sb) {
				t.Error("final states differ")
			}
			st := orig.Stats()
			orig.Flush()
			rest.Flush()
			sameSnapshot(t, orig.Last(), rest.Last())
			t.Logf("state %d bytes at the middle; %d windows, %d packets dropped after the middle", len(state), st.Windows, dropped+st.Dropped)
			if name == "full" && dropped == 0 || name == "onewindow" && st.Dropped == 0 {
				t.Error("no packet dropped: the filter is not full enough to test the kicks")
			}
		})
	}
}

func statsNoTime(s Stats) Stats {
	s.WindowStart = time.Time{}
	return s
}

func TestRestoreRefuses(t *testing.T) {
	ps := stateTrace(t)
	o := Options{ExpectedFlows: 1000}
	c := mustCounter(t, o)
	for i := range ps[:2000] {
		c.Add(ps[i].Hash, ps[i].Timestamp)
	}
	state, _ := c.AppendState(nil)
	for _, tc := range []struct {
		o   Options
		msg string
	}{
		{Options{ExpectedFlows: 2000}, "snapshot has expected_flows 1000, configured 2000"},
		{Options{ExpectedFlows: 1000, Window: 30 * time.Second}, "snapshot has window 1m0s, configured 30s"},
		{Options{ExpectedFlows: 1000, Seed: 9}, "snapshot has seed 0, configured 9"},
	} {
		other := mustCounter(t, tc.o)
		before, _ := other.AppendState(nil)
		err := other.RestoreState(state)
		if !errors.Is(err, snapshot.ErrIncompatible) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.msg)
		}
		if after, _ := other.AppendState(nil); !bytes.Equal(after, before) {
			t.Errorf("%+v: a refused restore changed the counter", tc.o)
		}
	}
	fresh := mustCounter(t, o)
	for _, n := range []int{0, 9, len(state) / 2, len(state) - 1} {
		if err := fresh.RestoreState(state[:n]); !errors.Is(err, snapshot.ErrDamaged) {
			t.Errorf("%d of %d bytes: %v", n, len(state), err)
		}
	}
	if fresh.Stats().Packets != 0 || fresh.Last() != nil {
		t.Error("refused restores changed the counter")
	}
}

// TestStateSize logs the state's size at the engine's default (2^18
// flows per window).
func TestStateSize(t *testing.T) {
	c := mustCounter(t, Options{ExpectedFlows: 1 << 18, FPRate: 1e-4})
	c.Add(1, t0)
	s1, _ := c.AppendState(nil)
	c.Add(1, t0.Add(2*time.Minute))
	s2, _ := c.AppendState(nil)
	t.Logf("flow counter at 2^18 flows: state %d bytes, %d with a published window", len(s1), len(s2))
}

// FuzzRestoreState: no input makes RestoreState panic; a refused input
// leaves the counter unchanged; an accepted one encodes back to itself
// and the counter then counts without panicking.
func FuzzRestoreState(f *testing.F) {
	ps := stateTrace(f)
	o := Options{Window: 2 * time.Second, ExpectedFlows: 40, FPRate: 1e-2, CounterBits: 8}
	c := mustCounter(f, o)
	for i := range ps[:300] {
		c.Add(ps[i].Hash, ps[i].Timestamp)
	}
	s, _ := c.AppendState(nil)
	f.Add(s)
	for i := range ps[300:3000] {
		c.Add(ps[300+i].Hash, ps[300+i].Timestamp)
	}
	s, _ = c.AppendState(nil)
	f.Add(s)
	f.Fuzz(func(t *testing.T, b []byte) {
		c := mustCounter(t, o)
		if !snapshottest.CheckRestore(t, c, b) {
			return
		}
		for i := range ps[3000:3200] {
			c.Add(ps[3000+i].Hash, ps[3000+i].Timestamp)
		}
	})
}
