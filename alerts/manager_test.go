package alerts

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func occ(h uint64, at time.Duration) Occurrence {
	return Occurrence{Hash: h, Key: h, Rule: "R", Severity: "warning", Suppress: time.Minute, Now: t0.Add(at)}
}

func alertAt(at time.Duration) Alert {
	return Alert{Labels: Labels{{"alertname", "R"}}, StartsAt: t0.Add(at)}
}

// TestManagerFoldsAndResolves: repeats within the suppress window fold
// into the firing alert; a quiet suppress window resolves it, at its
// last occurrence plus the window; a repeat after that is a new alert.
func TestManagerFoldsAndResolves(t *testing.T) {
	s := NewMemory("mem")
	m := NewManager(ManagerOptions{}, s)
	if m.Fold(occ(1, 0), 1) {
		t.Fatal("folded an alert never fired")
	}
	if !m.Fire(occ(1, 0), alertAt(0)) {
		t.Fatal("did not fire")
	}
	for i := 1; i <= 9; i++ {
		if !m.Fold(occ(1, time.Duration(i)*10*time.Second), 1) {
			t.Fatalf("repeat %d not folded", i)
		}
	}
	m.Sweep("R", t0.Add(140*time.Second), 0) // 50 s after the last: still firing
	m.Sweep("R", t0.Add(151*time.Second), 0)
	got := s.All()
	if len(got) != 2 || got[1].Count != 10 || !got[1].EndsAt.Equal(t0.Add(150*time.Second)) {
		t.Fatalf("sent %+v, want firing then resolved at last+suppress with count 10", got)
	}
	if m.Fold(occ(1, 200*time.Second), 1) {
		t.Error("a repeat after the alert resolved folded into nothing")
	}
	st := m.Stats().ByRule["R"]
	if st.Fired != 1 || st.Suppressed != 9 || st.Resolved != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestManagerCountsACrossingOnceAWindow: a counting rule's crossings
// fold one a window, whichever order the shards report them in: a second
// report of a window (of the current one, or of the one before it from a
// shard behind) counts nothing, also while the alert is pending.
func TestManagerCountsACrossingOnceAWindow(t *testing.T) {
	for _, pending := range []bool{false, true} {
		s := NewMemory("mem")
		m := NewManager(ManagerOptions{}, s)
		cross := func(w int64, at time.Duration) {
			o := occ(3, at)
			o.Crossing, o.Window = true, w
			if pending {
				o.For = time.Hour
			}
			if !m.Fold(o, 1) {
				m.Fire(o, alertAt(at))
			}
		}
		cross(10, 0)
		cross(10, time.Second) // again in window 10
		cross(11, 10*time.Second)
		cross(10, 10*time.Second) // window 10 from a shard behind
		cross(11, 12*time.Second)
		cross(12, 20*time.Second)
		if n := m.active[3].alert.Count; n != 3 {
			t.Errorf("pending %v: %d crossings counted in windows 10, 11 and 12, want 3", pending, n)
		}
	}
}

// TestManagerFor: an alert with for: 30s stays pending until it has held
// that long, and a pending alert that stops is dropped unseen.
func TestManagerFor(t *testing.T) {
	s := NewMemory("mem")
	m := NewManager(ManagerOptions{}, s)
	o := func(at time.Duration) Occurrence { x := occ(7, at); x.For = 30 * time.Second; return x }
	for _, at := range []time.Duration{0, 10 * time.Second, 20 * time.Second} {
		if m.Fire(o(at), alertAt(at)) {
			t.Fatalf("fired at %v, before its for", at)
		}
	}
	if !m.Fire(o(30*time.Second), alertAt(30*time.Second)) {
		t.Fatal("not firing after 30 s")
	}
	if got := s.All(); len(got) != 1 || !got[0].StartsAt.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("sent %+v", got)
	}
	// Another key: pending, then its condition stops (Check says no).
	m.Fire(o(0), alertAt(0))
	x := occ(8, 0)
	x.For = time.Minute
	m.Fire(x, alertAt(0))
	m.Check("R", t0.Add(40*time.Second), func(key uint64, _ time.Time) bool { return key != 8 })
	if st := m.Stats(); st.Pending != 0 || st.Active != 1 || len(s.All()) != 1 {
		t.Errorf("after the check: %+v, %d sent", st, len(s.All()))
	}
}

// TestManagerFullTableFoldsThroughFilter: past MaxActive, alerts are still
// delivered, and their repeats fold in the suppression filter rather than
// fire again, in fixed memory.
func TestManagerFullTableFoldsThroughFilter(t *testing.T) {
	s := NewMemory("mem")
	m := NewManager(ManagerOptions{MaxActive: 10}, s)
	for h := uint64(1); h <= 1000; h++ {
		m.Fire(occ(h, 0), alertAt(0))
	}
	for h := uint64(1); h <= 1000; h++ {
		if !m.Fold(occ(h, time.Second), 1) {
			t.Fatalf("repeat of %d fired again", h)
		}
	}
	st := m.Stats()
	if len(s.All()) != 1000 || st.Active != 10 || st.Untracked != 990 || st.ByRule["R"].Suppressed != 1000 {
		t.Errorf("%d sent, stats %+v", len(s.All()), st)
	}
}
