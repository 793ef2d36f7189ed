package cascade

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/flowmon/flowmon/filters/qf"
)

// small is a cascade with 1 KiB QF0s (2^9 slots of 20-bit values, 384
// fingerprints a merge) merged in the background: many merges and levels
// from a few thousand keys. smallSync has the same shape (one QF0 of the
// same size) with the paper's synchronous merges.
var (
	small     = Options{RAMBytes: 2 * MinRAMBytes, FingerprintBits: 19}
	smallSync = Options{RAMBytes: MinRAMBytes, FingerprintBits: 19, SyncMerge: true}
	modes     = []struct {
		name string
		o    Options
	}{{"background", small}, {"sync", smallSync}}
)

func mustOpen(t testing.TB, dir string, o Options) *Filter {
	t.Helper()
	f, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// model is the exact reference: copies per fingerprint, as the cascade
// counts them (inserts minus deletes).
type model struct {
	p     uint
	count map[uint64]int
	keys  map[uint64]int // live copies per key, to delete only what was inserted
}

func newModel(p uint) *model {
	return &model{p: p, count: map[uint64]int{}, keys: map[uint64]int{}}
}

func (m *model) fp(h uint64) uint64 { return qf.Fingerprint(h, m.p) }

// add records one insertion of key k.
func (m *model) add(k uint64) {
	m.count[m.fp(k)]++
	m.keys[k]++
}

func (m *model) clone() *model {
	c := newModel(m.p)
	for k, v := range m.count {
		c.count[k] = v
	}
	for k, v := range m.keys {
		c.keys[k] = v
	}
	return c
}

// check compares every key the model knows and some never inserted.
func (m *model) check(t *testing.T, f *Filter, what string) {
	t.Helper()
	for k := range m.keys {
		want := m.count[m.fp(k)]
		got, err := f.Count(k)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if int(got) != want {
			t.Fatalf("%s: count of key %#x (fp %#x) is %d, want %d", what, k, m.fp(k), got, want)
		}
		in, err := f.Contains(k)
		if err != nil || in != (want > 0) {
			t.Fatalf("%s: contains %#x = %t (%v), want %t", what, k, in, err, want > 0)
		}
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for range 300 {
		k := rng.Uint64()
		in, err := f.Contains(k)
		if err != nil || in != (m.count[m.fp(k)] > 0) {
			t.Fatalf("%s: absent key %#x: contains %t (%v)", what, k, in, err)
		}
	}
	var n int
	for _, c := range m.count {
		n += c
	}
	// Copies minus tombstones, over every level, is the model's total.
	if s := f.Stats(); s.Items-2*s.Tombstones != uint64(n) {
		t.Fatalf("%s: %d items with %d tombstones, model holds %d", what, s.Items, s.Tombstones, n)
	}
}

// TestAgainstReference inserts and deletes keys (a small key space, so
// keys repeat and fingerprints collide) through dozens of merges, closing
// and reopening the directory on the way, and compares every count with
// the model after each phase, in both merge modes (in the background one
// the checks run while merges may be running).
func TestAgainstReference(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) { testAgainstReference(t, mode.o) })
	}
}

func testAgainstReference(t *testing.T, o Options) {
	dir := t.TempDir()
	f := mustOpen(t, dir, o)
	m := newModel(f.sh.p)
	rng := rand.New(rand.NewPCG(1, 2))
	var live []uint64
	for phase := range 12 {
		for range 1500 {
			if len(live) > 0 && rng.IntN(100) < 30 {
				j := rng.IntN(len(live))
				k := live[j]
				live[j] = live[len(live)-1]
				live = live[:len(live)-1]
				if err := f.Delete(k); err != nil {
					t.Fatal(err)
				}
				m.count[m.fp(k)]--
				m.keys[k]--
				continue
			}
			k := rng.Uint64N(1 << 17)
			if err := f.Insert(k); err != nil {
				t.Fatal(err)
			}
			m.add(k)
			live = append(live, k)
		}
		m.check(t, f, "before reopen")
		if phase%3 == 2 {
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			f = mustOpen(t, dir, o)
			m.check(t, f, "after reopen")
		}
	}
	s := f.Stats()
	if s.Merges < 20 || len(s.Levels) < 3 {
		t.Fatalf("only %d merges, %d levels", s.Merges, len(s.Levels))
	}
	t.Logf("%d merges, levels %+v", s.Merges, s.Levels)
	f.Close()
}

// TestInsertOnlyLevels: without deletes every level holds what QF0 did,
// and a lookup of a key in QF0 reads no page.
func TestInsertOnlyLevels(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) { testInsertOnlyLevels(t, mode.o) })
	}
}

func testInsertOnlyLevels(t *testing.T, o Options) {
	dir := t.TempDir()
	f := mustOpen(t, dir, o)
	defer f.Close()
	m := newModel(f.sh.p)
	for k := range uint64(5000) {
		if err := f.Insert(k * 7919); err != nil {
			t.Fatal(err)
		}
		m.add(k * 7919)
	}
	m.check(t, f, "insert only")
	f.waitWriter()
	s := f.Stats()
	if s.Tombstones != 0 || s.Items != 5000 {
		t.Fatalf("stats %+v", s)
	}
	// Levels are as full as QF0 was: level i holds cap0·2^(i-1).
	for _, l := range s.Levels {
		if want := s.QF0Capacity << (l.Level - 1); l.Items != want {
			t.Errorf("level %d holds %d, want %d", l.Level, l.Items, want)
		}
		if l.Load > DefaultMaxLoad+1e-9 {
			t.Errorf("level %d load %.3f", l.Level, l.Load)
		}
	}
	before := f.Stats().PageReads
	if ok, _ := f.Contains(4999 * 7919); !ok || f.Stats().PageReads != before {
		t.Fatalf("the last key is in QF0: found %t, %d page reads", ok, f.Stats().PageReads-before)
	}
}

// TestCrashKeepsLastMerge abandons a filter with synchronous merges
// without Close (its files closed, nothing synced): reopened, it holds
// what the last merge or Sync made durable, and no file of an unfinished
// merge. (TestCrashDuringBackgroundMerge does the background merges.)
func TestCrashKeepsLastMerge(t *testing.T) {
	dir := t.TempDir()
	f := mustOpen(t, dir, smallSync)
	m := newModel(f.sh.p)
	var durable *model
	merges := f.Stats().Merges
	for k := range uint64(3000) {
		if err := f.Insert(k); err != nil {
			t.Fatal(err)
		}
		if s := f.Stats(); s.Merges != merges {
			// The merge ran before this insertion went to QF0.
			merges = s.Merges
			durable = m.clone()
		}
		m.add(k)
		if k == 2500 {
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			durable = m.clone()
		}
	}
	// A merge that died before its manifest: a level file nobody names.
	orphan := filepath.Join(dir, levelName(7, 999))
	if err := os.WriteFile(orphan, []byte("half a level"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.abandon()
	g := mustOpen(t, dir, smallSync)
	defer g.Close()
	durable.check(t, g, "after crash")
	lost := 0
	for k := range m.keys {
		if durable.count[durable.fp(k)] == 0 {
			lost++
			if in, err := g.Contains(k); in || err != nil {
				t.Fatalf("key %d inserted after the last merge and Sync survived the crash (%v)", k, err)
			}
		}
	}
	if lost == 0 {
		t.Fatal("the crash lost nothing: the test does not test it")
	}
	if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("orphan level file left: %v", err)
	}
}

// abandon closes f's files as a crash would, without syncing QF0 (a
// background merge must have ended, or its goroutine have exited as in
// a crash: see crashAt).
func (f *Filter) abandon() {
	f.mu.Lock()
	f.closed = true
	v := f.v
	f.mu.Unlock()
	v.release()
	f.readers.close()
	f.lock.Close()
}

func TestOptions(t *testing.T) {
	for _, o := range []Options{
		{},
		{RAMBytes: 100, FingerprintBits: 30},
		{RAMBytes: 1 << 20},
		{RAMBytes: 1 << 20, FingerprintBits: 30, FPRate: 0.01, Capacity: 10},
		{RAMBytes: 1 << 20, Capacity: 10},
		{RAMBytes: 1 << 20, FingerprintBits: 64},
		{RAMBytes: 1 << 20, FingerprintBits: 11},
		{RAMBytes: 1 << 20, FingerprintBits: 30, MaxLoad: 1},
		{RAMBytes: MinRAMBytes, FingerprintBits: 30}, // two QF0s need twice that
	} {
		if _, err := Open(t.TempDir(), o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: %v", o, err)
		}
	}
	sh, err := Options{RAMBytes: 256 << 20, Capacity: 8_590_000_000, FPRate: 0.0004, SyncMerge: true}.shape()
	if err != nil {
		t.Fatal(err)
	}
	// The paper's run: 8.59 billion keys at 0.04% in 256 MB of RAM.
	if sh.p != 45 || qfBytes(sh.q0, sh.v-sh.q0) > 256<<20 || qfBytes(sh.q0+1, sh.v-sh.q0-1) <= 256<<20 {
		t.Errorf("paper's shape: p=%d q0=%d (%d bytes)", sh.p, sh.q0, qfBytes(sh.q0, sh.v-sh.q0))
	}
	// Background merges split the budget in two QF0s of one quotient bit
	// less: the shape of a synchronous cascade with half the budget.
	bg, err := Options{RAMBytes: 512 << 20, Capacity: 8_590_000_000, FPRate: 0.0004}.shape()
	if err != nil || bg != sh {
		t.Errorf("background shape %+v (%v), synchronous with half the RAM %+v", bg, err, sh)
	}
}

func TestIncompatibleAndLocked(t *testing.T) {
	dir := t.TempDir()
	f := mustOpen(t, dir, small)
	if _, err := Open(dir, small); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v", err)
	}
	for k := range uint64(500) {
		f.Insert(k)
	}
	f.Close()
	o := small
	o.FingerprintBits++
	_, err := Open(dir, o)
	if !errors.Is(err, ErrIncompatible) {
		t.Fatalf("other fingerprint length: %v", err)
	}
	t.Log(err)
	if f, err := Open(dir, small); err != nil {
		t.Fatal(err)
	} else if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Insert(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("insert after close: %v", err)
	}
}

// TestFull fills a cascade whose 12-bit fingerprints allow three levels:
// the insertion that needs a fourth fails with ErrFull, and the filter
// still answers for everything inserted before, in both merge modes.
func TestFull(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			o := mode.o
			o.FingerprintBits = 12
			testFull(t, o)
		})
	}
}

func testFull(t *testing.T, o Options) {
	dir := t.TempDir()
	f := mustOpen(t, dir, o)
	defer f.Close()
	if f.sh.maxLevel != 3 {
		t.Fatalf("shape %+v", f.sh)
	}
	var n uint64
	for ; ; n++ {
		err := f.Insert(n)
		if errors.Is(err, ErrFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := f.sh.cap0 * 8; n != want {
		t.Fatalf("full after %d insertions, want %d (QF0 and three levels)", n, want)
	}
	for k := range n {
		if ok, err := f.Contains(k); !ok || err != nil {
			t.Fatalf("key %d lost (%v)", k, err)
		}
	}
}
