package fbf

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/internal/snapshot"
)

// elementStream is a stream of elements, a third of them repeats of
// recent ones, at a rate that rises and falls (so an adaptive FBF grows
// and shrinks), with a quiet gap in the middle of the second half.
func elementStream(n int) (hs []uint64, ts []time.Time) {
	r := rand.New(rand.NewPCG(7, 8))
	now := t0
	for i := range n {
		rate := 2000 + 1500*float64((i/3000)%4) // elements per second
		now = now.Add(time.Duration(float64(time.Second) / rate))
		if i == n*3/4 {
			now = now.Add(1500 * time.Millisecond)
		}
		h := r.Uint64()
		if len(hs) > 100 && r.IntN(3) == 0 {
			h = hs[len(hs)-1-r.IntN(100)]
		}
		hs, ts = append(hs, h), append(ts, now)
	}
	return hs, ts
}

func TestRestoreContinues(t *testing.T) {
	hs, ts := elementStream(40000)
	half := len(hs) / 2
	for name, o := range map[string]Options{
		"basic":    {ElementsPerPeriod: 500, FPRate: 1e-3, Refresh: 100 * time.Millisecond},
		"N=3":      {ElementsPerPeriod: 300, FPRate: 1e-2, Past: 3, Refresh: 50 * time.Millisecond, Blocked: true, Check: Simple},
		"adaptive": {ElementsPerPeriod: 200, FPRate: 1e-2, Refresh: 200 * time.Millisecond, Adaptive: Adaptive{TargetFPP: 1e-3, Interval: 300 * time.Millisecond, RefreshStep: 20 * time.Millisecond, MaxFilters: 12}},
	} {
		t.Run(name, func(t *testing.T) {
			orig, err := NewWithOptions(o)
			if err != nil {
				t.Fatal(err)
			}
			for i := range hs[:half] {
				orig.TestAndAdd(hs[i], ts[i])
			}
			state, err := orig.AppendState(nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("at the middle: %d filters, %d spares", len(orig.filters), len(orig.spare))
			rest, _ := NewWithOptions(o)
			if err := rest.RestoreState(state); err != nil {
				t.Fatal(err)
			}
			if again, _ := rest.AppendState(nil); !bytes.Equal(again, state) {
				t.Fatal("the restored state differs from the one it was restored from")
			}
			var present int
			for i := half; i < len(hs); i++ {
				a, b := orig.TestAndAdd(hs[i], ts[i]), rest.TestAndAdd(hs[i], ts[i])
				if a != b {
					t.Fatalf("element %d: original %t, restored %t", i, a, b)
				}
				if a {
					present++
				}
			}
			orig.Publish()
			rest.Publish()
			if a, b := orig.Stats(), rest.Stats(); a != b {
				t.Errorf("stats:\noriginal %+v\nrestored %+v", a, b)
			}
			if orig.MemoryBytes() != rest.MemoryBytes() {
				t.Errorf("memory %d, restored %d", orig.MemoryBytes(), rest.MemoryBytes())
			}
			sa, _ := orig.AppendState(nil)
			sb, _ := rest.AppendState(nil)
			if !bytes.Equal(sa, sb) {
				t.Error("final states differ")
			}
			s := orig.Stats()
			t.Logf("state %d bytes at the middle; %d present after it; %d filters, %d spares, %d refreshes, %d ups, %d downs",
				len(state), present, s.Filters, len(orig.spare), s.Refreshes, s.ScaleUps, s.ScaleDowns)
			if name == "adaptive" && (s.ScaleUps == 0 || s.ScaleDowns == 0) {
				t.Error("the adaptive FBF did not resize both ways: the test misses that state")
			}
		})
	}
}

func TestRestoreRefuses(t *testing.T) {
	o := Options{ElementsPerPeriod: 500, FPRate: 1e-3, Refresh: 100 * time.Millisecond}
	f, _ := NewWithOptions(o)
	f.TestAndAdd(1, t0)
	state, _ := f.AppendState(nil)
	o2 := o
	o2.Refresh = 200 * time.Millisecond
	g, _ := NewWithOptions(o2)
	before, _ := g.AppendState(nil)
	err := g.RestoreState(state)
	if !errors.Is(err, snapshot.ErrIncompatible) || !strings.Contains(err.Error(), "snapshot has refresh 100ms, configured 200ms") {
		t.Errorf("other period: %v", err)
	}
	for _, n := range []int{0, 5, len(state) / 2, len(state) - 1} {
		if err := g.RestoreState(state[:n]); !errors.Is(err, snapshot.ErrDamaged) && !errors.Is(err, snapshot.ErrIncompatible) {
			t.Errorf("%d bytes: %v", n, err)
		}
	}
	if after, _ := g.AppendState(nil); !bytes.Equal(after, before) {
		t.Error("refused restores changed the filter")
	}
}
