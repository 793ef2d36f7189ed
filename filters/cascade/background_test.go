package cascade

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// holdMerges makes f's merges stop at stage until release is called,
// and reports on the returned channel each merge that reached it.
func holdMerges(f *Filter, stage mergeStage) (reached <-chan struct{}, release func()) {
	r := make(chan struct{}, 100)
	gate := make(chan struct{})
	f.hook = func(s mergeStage) {
		if s == stage {
			r <- struct{}{}
			<-gate
		}
	}
	var once sync.Once
	return r, func() { once.Do(func() { close(gate) }) }
}

// fill inserts keys from *next on until the active QF0 is full (no
// merge needed), recording them in m.
func fill(t *testing.T, f *Filter, m *model, next *uint64) {
	t.Helper()
	for f.Stats().QF0Items < f.sh.cap0 {
		if err := f.TryInsert(*next); err != nil {
			t.Fatalf("insert %d into a QF0 with room: %v", *next, err)
		}
		m.add(*next)
		*next++
	}
}

// TestNoInsertWaitsForMerge holds a background merge open before it
// writes anything: insertions go on into a fresh QF0 until it is full
// too, lookups find the keys of both QF0s and of the levels, and only
// then does TryInsert refuse (ErrBusy) — a behaviour, not a timing. Once
// the merge is let go, Insert proceeds.
func TestNoInsertWaitsForMerge(t *testing.T) {
	f := mustOpen(t, t.TempDir(), small)
	defer f.Close()
	m := newModel(f.sh.p)
	reached, release := holdMerges(f, stageStart)
	defer release()
	var k uint64
	fill(t, f, m, &k)
	// The next insertion freezes the full QF0 and starts its merge,
	// which the hook holds; this goroutine does not wait for it.
	if err := f.TryInsert(k); err != nil {
		t.Fatal(err)
	}
	m.add(k)
	k++
	<-reached
	if s := f.Stats(); !s.Merging || s.FrozenItems != f.sh.cap0 || s.Merges != 0 {
		t.Fatalf("stats with the merge held: %+v", s)
	}
	fill(t, f, m, &k)
	m.check(t, f, "merge held, both QF0s full")
	if err := f.TryInsert(k); !errors.Is(err, ErrBusy) {
		t.Fatalf("TryInsert with both QF0s full: %v, want ErrBusy", err)
	}
	if n, _ := f.Count(k); n != 0 {
		t.Fatalf("the refused key was inserted (%d copies)", n)
	}
	release()
	if err := f.Insert(k); err != nil { // waits for the merge, then freezes again
		t.Fatal(err)
	}
	m.add(k)
	f.waitWriter()
	m.check(t, f, "after the merges")
	if s := f.Stats(); s.Merges != 2 || s.Merging {
		t.Fatalf("stats after: %+v", s)
	}
}

// TestBackgroundLookupsDuringMerges: an exact reference beside a
// cascade with background merges, through many merges, with lookups of
// every key inserted so far and of absent keys running on other
// goroutines while the merges run: never a false negative, and a false
// positive only where the model's fingerprints collide.
func TestBackgroundLookupsDuringMerges(t *testing.T) {
	f := mustOpen(t, t.TempDir(), small)
	defer f.Close()
	p := f.sh.p
	const n = 12000
	var done atomic.Uint64 // keys 0..done-1 are inserted
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var lookups atomic.Uint64
	errc := make(chan error, 4)
	for g := range 3 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for {
				select {
				case <-stop:
					return
				default:
				}
				d := done.Load()
				if d == 0 {
					continue
				}
				k := rng.Uint64N(d)
				if ok, err := f.Contains(k * 0x9e37); err != nil || !ok {
					errc <- errors.Join(errors.New("false negative during merges"), err)
					return
				}
				lookups.Add(1)
			}
		})
	}
	m := newModel(p)
	for k := range uint64(n) {
		if err := f.Insert(k * 0x9e37); err != nil {
			t.Fatal(err)
		}
		m.add(k * 0x9e37)
		done.Store(k + 1)
	}
	close(stop)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	m.check(t, f, "after the inserts")
	s := f.Stats()
	if s.Merges < 25 {
		t.Fatalf("only %d merges", s.Merges)
	}
	t.Logf("%d merges, %d lookups alongside", s.Merges, lookups.Load())
}

// TestConcurrentInsertsAndLookups runs inserters (Insert, TryInsert,
// Delete of their own keys) and readers on one filter at once, under the
// race detector in CI: every key an inserter has acknowledged and not
// deleted is found by everyone, and the counts come out exact.
func TestConcurrentInsertsAndLookups(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			f := mustOpen(t, t.TempDir(), mode.o)
			defer f.Close()
			const writers, per = 3, 1500
			var wg sync.WaitGroup
			acked := make([]atomic.Uint64, writers) // writer w's keys below acked are in
			kept := make([]map[uint64]bool, writers)
			var busy atomic.Uint64
			errc := make(chan error, 2*writers)
			for w := range writers {
				kept[w] = map[uint64]bool{}
				wrote := make(chan struct{})
				wg.Go(func() {
					defer close(wrote)
					for i := range uint64(per) {
						k := uint64(w)<<32 | i
						err := f.TryInsert(k)
						if errors.Is(err, ErrBusy) {
							busy.Add(1)
							err = f.Insert(k)
						}
						if err != nil {
							errc <- err
							return
						}
						kept[w][k] = true
						// Delete an older even key: the odd ones stay.
						if d := uint64(w)<<32 | (i/2)&^1; i%7 == 3 && kept[w][d] {
							if err := f.Delete(d); err != nil {
								errc <- err
								return
							}
							delete(kept[w], d)
						}
						acked[w].Store(i + 1)
					}
				})
				wg.Go(func() { // a reader of writer w's odd keys, while it writes
					rng := rand.New(rand.NewPCG(uint64(w), 2))
					for {
						select {
						case <-wrote:
							return
						default:
						}
						a := acked[w].Load()
						if a < 2 {
							continue
						}
						if j := rng.Uint64N(a/2)*2 + 1; j < a {
							if ok, err := f.Contains(uint64(w)<<32 | j); err != nil || !ok {
								errc <- errors.Join(errors.New("acknowledged key not found"), err)
								return
							}
						}
					}
				})
			}
			wg.Wait()
			close(errc)
			for err := range errc {
				t.Fatal(err)
			}
			m := newModel(f.sh.p)
			for w := range writers {
				for k := range kept[w] {
					m.add(k)
				}
			}
			m.check(t, f, "after the writers")
			t.Logf("%d merges, %d insertions busy", f.Stats().Merges, busy.Load())
		})
	}
}

// TestCrashDuringBackgroundMerge ends a background merge's goroutine at
// each stage as a crash would (the hook holds it while insertions go on
// into the fresh QF0, then the goroutine exits and the files are closed
// unsynced), and reopens the directory. What a crash loses is what the
// package doc says: before the merge commits, everything since the last
// Sync (the frozen QF0's keys that came after it, and the active QF0's);
// after, only the active QF0's keys. Never a key Sync acknowledged, and
// no file of the unfinished merge is left.
func TestCrashDuringBackgroundMerge(t *testing.T) {
	for _, stage := range []mergeStage{stageStart, stageWritten, stageCommitted} {
		t.Run(stage.String(), func(t *testing.T) {
			dir := t.TempDir()
			f := mustOpen(t, dir, small)
			m := newModel(f.sh.p)
			var k uint64
			for ; k < 1000; k++ { // some levels, and keys in QF0
				if err := f.Insert(k); err != nil {
					t.Fatal(err)
				}
				m.add(k)
			}
			f.waitWriter()
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			synced := m.clone()
			fill(t, f, m, &k)
			frozen := m.clone()
			reached, crash := make(chan struct{}), make(chan struct{})
			f.hook = func(s mergeStage) {
				if s == stage {
					close(reached)
					<-crash
					runtime.Goexit()
				}
			}
			for i := range 50 { // the first freezes QF0; the rest go to the fresh one
				if err := f.TryInsert(k); err != nil {
					t.Fatalf("insertion %d while the merge is held: %v", i, err)
				}
				m.add(k)
				k++
			}
			<-reached
			close(crash)
			f.waitWriter()
			f.abandon()

			g := mustOpen(t, dir, small)
			defer g.Close()
			want := synced
			if stage == stageCommitted {
				want = frozen
			}
			want.check(t, g, "after the crash")
			lost := 0
			for k := range m.keys {
				if want.keys[k] == 0 {
					lost++
					if n, err := g.Count(k); err != nil || n != uint64(want.count[want.fp(k)]) {
						t.Fatalf("key %d, inserted after what the crash keeps, has %d copies (%v)", k, n, err)
					}
				}
			}
			if lost == 0 {
				t.Fatal("the crash lost nothing: the test does not test it")
			}
			if files, levels := len(g.levelFiles()), len(g.Stats().Levels); files != levels {
				t.Fatalf("%d level files for %d levels: the unfinished merge's are left", files, levels)
			}
			t.Logf("crash at %s: %d keys kept, %d lost", stage, len(want.keys), lost)
		})
	}
}

// TestBackgroundMergeFailure: a merge that cannot create its level file
// (a file of its name is in the way) fails on its goroutine; the frozen
// QF0 stays frozen and read, the next insertion reports the error, and
// the insertion that next needs room runs the merge again, which, the
// way now clear, succeeds: nothing is lost.
func TestBackgroundMergeFailure(t *testing.T) {
	dir := t.TempDir()
	f := mustOpen(t, dir, small)
	defer f.Close()
	m := newModel(f.sh.p)
	var k uint64
	insert := func() {
		t.Helper()
		if err := f.Insert(k); err != nil {
			t.Fatal(err)
		}
		m.add(k)
		k++
	}
	fill(t, f, m, &k)
	block := filepath.Join(dir, levelName(1, 1))
	if err := os.WriteFile(block, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	insert() // freezes QF0; its merge fails
	f.waitWriter()
	if err := f.Insert(k); !errors.Is(err, os.ErrExist) {
		t.Fatalf("insertion after the failed merge: %v, want its error", err)
	}
	if s := f.Stats(); !s.Merging || s.Merges != 0 {
		t.Fatalf("stats after the failure: %+v", s)
	}
	m.check(t, f, "frozen QF0 of the failed merge")
	insert() // reported once: the active QF0 has room
	os.Remove(block)
	fill(t, f, m, &k)
	insert() // runs the merge again, waits for it, freezes the next QF0
	f.waitWriter()
	m.check(t, f, "after the merge ran again")
	if s := f.Stats(); s.Merging || s.Merges != 2 {
		t.Fatalf("stats after: %+v", s)
	}
}

// TestSeal: a sealed filter holds no QF0 in RAM, only its levels' page
// checksums, answers as before, and reopens without a QF0.
func TestSeal(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			dir := t.TempDir()
			f := mustOpen(t, dir, mode.o)
			m := newModel(f.sh.p)
			for k := range uint64(1000) {
				if err := f.Insert(k); err != nil {
					t.Fatal(err)
				}
				m.add(k)
			}
			if err := f.Seal(); err != nil {
				t.Fatal(err)
			}
			ramOnlyChecksums := func(f *Filter, what string) {
				s := f.Stats()
				var crcs uint64
				for _, l := range s.Levels {
					crcs += 4 * ((l.Bytes/PageSize - 1) * PageSize / (PageSize + 4))
				}
				if s.QF0Bytes != 0 || s.QF0Items != 0 || s.Merging || s.RAMBytes > crcs+4*uint64(len(s.Levels)) {
					t.Fatalf("%s: stats %+v", what, s)
				}
			}
			ramOnlyChecksums(f, "sealed")
			m.check(t, f, "sealed")
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			g := mustOpen(t, dir, mode.o)
			defer g.Close()
			ramOnlyChecksums(g, "reopened")
			m.check(t, g, "reopened")
		})
	}
}
