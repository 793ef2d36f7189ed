package recent

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/flowmon/flowmon/internal/snapshot"
)

const window = 50 * time.Millisecond

func newTable(t testing.TB, o Options) *Table {
	t.Helper()
	tb, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// TestAgainstExact runs a stream of 1 Mpps, a fifth of it repeats of
// earlier keys at delays up to 1.5 windows, through a table sized for the
// rate and through an exact map of when each key was inserted. Within the
// window every repeat must be found but for the keys forgotten early
// (within three times the Poisson rate, and never more than the table
// counts overwritten); past 1.25 windows none may be but for false
// positives, and keys never seen are taken for repeats within three times
// the false-positive bound.
func TestAgainstExact(t *testing.T) {
	const perWindow = 50_000
	tb := newTable(t, Options{Window: window, Expected: perWindow, Seed: 7})
	r := rand.New(rand.NewPCG(7, 7))
	type ins struct {
		key uint64
		at  int64
	}
	var (
		past                             []ins
		inserted                         = map[uint64]int64{}
		heldN, heldMissed, goneN, goneFP int
		fresh, freshFP                   int
	)
	w := int64(window)
	for i := range 40 * perWindow {
		now := int64(i) * 1000 // 1 µs a key
		var k uint64
		if len(past) > 0 && r.IntN(5) == 0 {
			// A repeat of a key inserted up to 1.5 windows ago.
			d := int64(r.Float64() * 1.5 * float64(w))
			j := len(past) - 1 - int(d/1000)
			if j < 0 {
				j = 0
			}
			k = past[j].key
		} else {
			k = r.Uint64()
		}
		at, seen := inserted[k]
		got := tb.TestAndAdd(k, now)
		switch {
		case !seen:
			fresh++
			if got {
				freshFP++
			}
		case now-at < w:
			heldN++
			if !got {
				heldMissed++
			}
		case now-at >= w+w/ticksPerWindow:
			goneN++
			if got {
				goneFP++
			}
		}
		if !got {
			inserted[k] = now
		}
		past = append(past, ins{k, now})
	}
	tb.Publish()
	st := tb.Stats()
	if heldN == 0 || goneN == 0 {
		t.Fatalf("the stream made %d repeats within the window and %d past it", heldN, goneN)
	}
	if lim := 3*EarlyForgetRate(LoadPerBucket)*float64(heldN) + 3; float64(heldMissed) > lim || uint64(heldMissed) > st.Overwritten {
		t.Errorf("%d of %d repeats within the window missed; want at most %.1f and at most the %d cells overwritten",
			heldMissed, heldN, lim, st.Overwritten)
	}
	if lim := 3*FalsePositiveBound()*float64(goneN) + 3; float64(goneFP) > lim {
		t.Errorf("%d of %d repeats past the window found; want at most %.1f", goneFP, goneN, lim)
	}
	if lim := 3*FalsePositiveBound()*float64(fresh) + 3; float64(freshFP) > lim {
		t.Errorf("%d of %d new keys taken for repeats; want at most %.1f", freshFP, fresh, lim)
	}
	// The table holds the keys of the last 1.25 windows at most: at this
	// rate about 5 a bucket (its sizing load, four over the longest hold).
	if want := float64(5*perWindow/4) / float64(st.Buckets) / float64(fpMask); st.FPP < want/1.5 || st.FPP > want*1.1 {
		t.Errorf("estimated FPP %g, want about %g", st.FPP, want)
	}
	t.Logf("held %d (missed %d), past %d (found %d), new %d (found %d); overwritten %d, FPP %.3g, %d bytes",
		heldN, heldMissed, goneN, goneFP, fresh, freshFP, st.Overwritten, st.FPP, st.MemoryBytes)
}

// TestWindowBounds: a key is held for the window at least and for a
// quarter window more at most.
func TestWindowBounds(t *testing.T) {
	w, tick := int64(window), int64(window)/ticksPerWindow
	for _, start := range []int64{0, 1, tick - 1, 5*tick + tick/2, 1 << 40} {
		tb := newTable(t, Options{Window: window, Expected: 1000, Seed: 1})
		tb.TestAndAdd(42, start)
		if !tb.Test(42, start+w-1) {
			t.Errorf("start %d: forgotten before the window ended", start)
		}
		if tb.Test(42, start+w+tick) {
			t.Errorf("start %d: held past 1.25 windows", start)
		}
	}
}

// TestRingForgetsOldest: a bucket that receives a sixteenth key within the
// window forgets its oldest and counts it.
func TestRingForgetsOldest(t *testing.T) {
	tb := newTable(t, Options{Window: window, Expected: 1, Seed: 1}) // one bucket
	if tb.Buckets() != 1 {
		t.Fatalf("%d buckets, want 1", tb.Buckets())
	}
	for k := uint64(1); k <= CellsPerBucket+1; k++ {
		if tb.TestAndAdd(k, int64(k)) {
			t.Fatalf("key %d found before it was inserted", k)
		}
	}
	if tb.Test(1, 100) {
		t.Error("the oldest key is still held after 16 keys")
	}
	for k := uint64(2); k <= CellsPerBucket+1; k++ {
		if !tb.Test(k, 100) {
			t.Errorf("key %d forgotten", k)
		}
	}
	tb.Publish()
	if st := tb.Stats(); st.Overwritten != 1 || st.Inserted != CellsPerBucket+1 || st.Live != CellsPerBucket {
		t.Errorf("stats %+v; want 1 overwritten, 16 inserted, 15 live", st)
	}
}

// TestNoWrap: a cell's tick is 7 bits; 128 ticks later its age would
// read 0 again. The sweep empties it first, whether the clock steps there
// packet by packet or jumps.
func TestNoWrap(t *testing.T) {
	tick := int64(window) / ticksPerWindow
	for _, step := range []int64{tick / 100, 3 * tick, 128 * tick} {
		tb := newTable(t, Options{Window: window, Expected: 10_000, Seed: 3})
		tb.TestAndAdd(42, 0)
		for now := step; now < 128*tick; now += step {
			tb.Advance(now)
		}
		if tb.Test(42, 128*tick) {
			t.Errorf("step %d: a key 128 ticks old is held (its tick wrapped)", step)
		}
		tb.Publish()
		if st := tb.Stats(); st.Live != 0 {
			t.Errorf("step %d: %d cells live after 32 windows without a key", step, st.Live)
		}
	}
}

// TestEarlyForgetRate checks the Poisson tail against a sum of its terms.
func TestEarlyForgetRate(t *testing.T) {
	for _, l := range []float64{1, 4, 7.5} {
		tail := 0.0
		for i := CellsPerBucket; i < 200; i++ {
			lg, _ := math.Lgamma(float64(i) + 1)
			tail += math.Exp(float64(i)*math.Log(l) - l - lg)
		}
		if got := EarlyForgetRate(l); math.Abs(got-tail) > 1e-9+1e-6*tail {
			t.Errorf("EarlyForgetRate(%g) = %g, want %g", l, got, tail)
		}
	}
	if r := EarlyForgetRate(LoadPerBucket); r > 2e-5 {
		t.Errorf("at the sizing load a key is forgotten early with probability %g", r)
	}
}

func TestOptions(t *testing.T) {
	if _, err := New(Options{Window: 3}); !errors.Is(err, ErrOptions) {
		t.Errorf("window 3 ns: %v", err)
	}
	if _, err := New(Options{Window: window, Expected: 1 << 40}); !errors.Is(err, ErrOptions) {
		t.Errorf("2^40 keys: %v", err)
	}
}

// TestState: a table restored from another's state answers as the other
// does; a state of another shape or a damaged one is refused and leaves
// the table as it was.
func TestState(t *testing.T) {
	o := Options{Window: window, Expected: 20_000, Seed: 9}
	a, b := newTable(t, o), newTable(t, o)
	r := rand.New(rand.NewPCG(9, 9))
	keys := make([]uint64, 30_000)
	for i := range keys {
		keys[i] = r.Uint64()
		a.TestAndAdd(keys[i], int64(i)*1500)
	}
	st, err := a.AppendState(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.RestoreState(st); err != nil {
		t.Fatal(err)
	}
	for i := range 60_000 {
		k, now := keys[r.IntN(len(keys))], int64(30_000+i)*1500
		if i%3 == 0 {
			k = r.Uint64()
		}
		if x, y := a.TestAndAdd(k, now), b.TestAndAdd(k, now); x != y {
			t.Fatalf("op %d: original %v, restored %v", i, x, y)
		}
	}
	a.Publish()
	b.Publish()
	if a.Stats() != b.Stats() {
		t.Errorf("stats differ: %+v and %+v", a.Stats(), b.Stats())
	}

	other := newTable(t, Options{Window: window, Expected: 40_000, Seed: 9})
	if err := other.RestoreState(st); !errors.Is(err, snapshot.ErrIncompatible) {
		t.Errorf("another shape: %v", err)
	}
	c := newTable(t, o)
	for _, bad := range [][]byte{st[:len(st)-1], damage(st, len(st)-4, 0xff), damage(st, len(st)-8, 0x01)} {
		if err := c.RestoreState(bad); !errors.Is(err, snapshot.ErrDamaged) {
			t.Errorf("damaged state: %v", err)
		}
	}
	c.Publish()
	if st := c.Stats(); st.Live != 0 || st.Inserted != 0 {
		t.Errorf("a refused state changed the table: %+v", st)
	}
}

// damage returns a copy of b with byte i set to v.
func damage(b []byte, i int, v byte) []byte {
	c := append([]byte(nil), b...)
	c[i] = v
	return c
}

func TestAllocs(t *testing.T) {
	tb := newTable(t, Options{Window: window, Expected: 1000})
	var k uint64
	if n := testing.AllocsPerRun(1000, func() { k++; tb.TestAndAdd(k, int64(k)) }); n != 0 {
		t.Errorf("TestAndAdd allocates %.1f times", n)
	}
}

// BenchmarkTestAndAdd is a key of a packet stream at 1 Mpps against a 50
// ms window sized for it, every key new (the common case), as dedup's
// BenchmarkCheckPrint runs the FBF.
func BenchmarkTestAndAdd(b *testing.B) {
	tb := newTable(b, Options{Window: window, Expected: 50_000})
	const laps = 1 << 16
	r := rand.New(rand.NewPCG(4, 4))
	keys := make([]uint64, laps)
	for i := range keys {
		keys[i] = r.Uint64()
	}
	found := 0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if tb.TestAndAdd(keys[i&(laps-1)]^uint64(i/laps)*0x9e3779b97f4a7c15, int64(i)*1000) {
			found++
		}
	}
	b.ReportMetric(float64(found)/float64(b.N), "found/op")
}
