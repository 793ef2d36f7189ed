package cascade

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flowmon/flowmon/filters/qf"
	"github.com/flowmon/flowmon/internal/snapshot"
)

// Filter is a Cascade Filter kept in a directory. See the package doc.
// Safe for concurrent use.
type Filter struct {
	dir  string
	opts Options
	sh   shape
	lock *os.File

	// wmu is held by whoever may write the manifest: a merge from its
	// freeze to its commit (a background merge's goroutine holds it for
	// the merge's length), Sync, Seal and Close. It is taken before mu
	// and never waited for while holding mu (insertions TryLock it).
	wmu sync.Mutex

	mu          sync.Mutex // guards the fields below
	active      *qf.Filter // QF0 taking insertions; nil until one needs it
	activeTombs uint64
	spare       *qf.Filter // the next active QF0, allocated by the last background merge
	v           *view      // the frozen QF0 and the levels lookups read (view.go)
	st          state      // the manifest's, as of the last merge; changed only under wmu and mu
	mergeErr    error      // a background merge's failure, until an insertion reports it
	written     uint64     // level bytes written by merges
	mergeTime   time.Duration
	longest     time.Duration
	closed      bool

	hook    func(mergeStage) // tests: called by merges at each stage
	readers readerPool
	dropped []LevelError
}

// Open opens the Cascade Filter in dir, creating the directory and an
// empty filter if there is none. A directory made with other options is
// refused (ErrIncompatible, naming the first that differs); a damaged
// manifest is refused (ErrCorrupt); a damaged level is refused with a
// *LevelError naming it, or dropped with Options.DropDamaged. Files of
// merges a crash interrupted are removed. QF0 is allocated when the
// first insertion needs it (or loaded, if the manifest holds one).
func Open(dir string, o Options) (*Filter, error) {
	sh, err := o.shape()
	if err != nil {
		return nil, fmt.Errorf("open cascade filter %s: %w", dir, err)
	}
	if o.Uncached {
		if err := directSupported(); err != nil {
			return nil, fmt.Errorf("open cascade filter %s: %w", dir, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open cascade filter: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open cascade filter: %w", err)
	}
	f := &Filter{dir: dir, opts: o, sh: sh, lock: lock}
	if err := f.load(); err != nil {
		lock.Close()
		return nil, fmt.Errorf("open cascade filter %s: %w", dir, err)
	}
	return f, nil
}

func manifestPath(dir string) string { return filepath.Join(dir, manifestName) }

func (f *Filter) newQF0() *qf.Filter {
	g, err := qf.New(qf.Options{QuotientBits: f.sh.q0, RemainderBits: f.sh.v - f.sh.q0})
	if err != nil {
		panic(err) // the shape was validated
	}
	return g
}

// load reads the manifest, QF0 and the levels, and installs the view. A
// directory without a manifest is a new, empty filter (its manifest is
// written by the first merge, Sync or Close).
func (f *Filter) load() (err error) {
	var levels []*level
	defer func() {
		if err != nil {
			for _, l := range levels {
				if l != nil {
					l.close()
				}
			}
			return
		}
		f.v = newView(nil, 0, levels)
	}()
	_, secs, err := snapshot.Read(manifestPath(f.dir), f.sh.params(), 0, time.Now())
	switch {
	case errors.Is(err, snapshot.ErrMissing):
		if names := f.levelFiles(); len(names) > 0 {
			return fmt.Errorf("no %s but %d level files (%s): %w", manifestName, len(names), names[0], ErrCorrupt)
		}
		f.st = state{nextGen: 1}
		return nil
	case errors.Is(err, snapshot.ErrIncompatible) || errors.Is(err, snapshot.ErrVersion):
		return fmt.Errorf("%w: %w", ErrIncompatible, err)
	case err != nil:
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	data, ok1 := snapshot.Find(secs, "levels")
	qf0, ok2 := snapshot.Find(secs, "qf0")
	if !ok1 || !ok2 || len(secs) != 2 {
		return fmt.Errorf("%s: sections other than levels and qf0: %w", manifestName, ErrCorrupt)
	}
	if f.st, err = decodeState(data, f.sh); err != nil {
		return fmt.Errorf("%s: %w: %w", manifestName, ErrCorrupt, err)
	}
	if len(qf0) > 0 {
		var g qf.Filter
		if err := g.UnmarshalBinary(qf0); err != nil {
			return fmt.Errorf("%s: QF0: %w: %w", manifestName, ErrCorrupt, err)
		}
		if g.QuotientBits() != f.sh.q0 || g.FingerprintBits() != f.sh.v || g.Len() > f.sh.cap0 {
			return fmt.Errorf("%s: QF0 of 2^%d slots, %d-bit values, %d fingerprints: %w",
				manifestName, g.QuotientBits(), g.FingerprintBits(), g.Len(), ErrCorrupt)
		}
		f.active = &g
		for v := range g.All() {
			f.activeTombs += v & 1
		}
	}
	kept := f.st.levels[:0:0]
	for _, m := range f.st.levels {
		l, err := openLevel(f.dir, m, f.opts.QuickOpen, f.opts.Uncached)
		if err != nil {
			var le *LevelError
			if !f.opts.DropDamaged || !errors.As(err, &le) || !errors.Is(err, ErrCorrupt) && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			// The rename keeps the damaged file aside for a look; the level is dropped either way.
			_ = os.Rename(le.Path, le.Path+".damaged")
			f.dropped = append(f.dropped, *le)
			continue
		}
		levels = setLevel(levels, l)
		kept = append(kept, m)
	}
	f.removeOrphans()
	if len(f.dropped) > 0 {
		f.st.levels = kept
		if err := writeManifest(f.dir, f.sh, &f.st, f.qf0Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// setLevel puts l in its place in levels (levels[i-1] is level i).
func setLevel(levels []*level, l *level) []*level {
	for len(levels) < l.level {
		levels = append(levels, nil)
	}
	levels[l.level-1] = l
	return levels
}

// levelFiles lists the level files in the directory.
func (f *Filter) levelFiles() []string {
	ents, _ := os.ReadDir(f.dir)
	var out []string
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, "level-") && strings.HasSuffix(n, levelExt) && e.Type().IsRegular() {
			out = append(out, n)
		}
	}
	return out
}

// removeOrphans removes level files the manifest does not name: those of
// merges that did not reach their manifest, and those of merges whose
// manifest was written but whose old levels were not yet removed.
func (f *Filter) removeOrphans() {
	for _, n := range f.levelFiles() {
		if !slices.ContainsFunc(f.st.levels, func(m levelMeta) bool { return m.name() == n }) {
			os.Remove(filepath.Join(f.dir, n))
		}
	}
}

// qf0Bytes is the active QF0's MarshalBinary, nil when it is empty.
// Called with mu held.
func (f *Filter) qf0Bytes() []byte {
	if f.active == nil || f.active.Len() == 0 {
		return nil
	}
	b, _ := f.active.MarshalBinary()
	return b
}

func (f *Filter) value(h uint64) uint64 { return qf.Fingerprint(h, f.sh.p) << 1 }

// Insert adds the element with hash h (a multiset: twice is twice). When
// QF0 is full, with Options.SyncMerge Insert first merges it into the
// levels and takes as long as the merge; otherwise it freezes QF0, hands
// it to a background merge and inserts into a fresh QF0, and waits only
// when that one fills too before the merge ends (TryInsert does not).
func (f *Filter) Insert(h uint64) error {
	if err := f.add(f.value(h), true); err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	return nil
}

// TryInsert is Insert that never waits for a merge another call runs:
// where Insert would wait it returns ErrBusy and inserts nothing (the
// caller may count the element as not recorded, or try later). With
// Options.SyncMerge, the call that finds QF0 full merges, as Insert
// does; ErrBusy then means that Sync, Seal or Close holds the filter.
func (f *Filter) TryInsert(h uint64) error {
	if err := f.add(f.value(h), false); err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	return nil
}

// Delete removes one copy of the element with hash h: from QF0 if it
// holds one, else by inserting a tombstone into QF0 that cancels one copy
// in a level when the two meet in a merge, and that lookups subtract
// meanwhile. Delete does not look the element up on disk (that would cost
// a lookup's reads): deleting an element that was not inserted is the
// caller's error, and hides a later copy of any element with its
// fingerprint (a false negative), as in any AMQ that deletes. It waits
// for room as Insert does.
func (f *Filter) Delete(h uint64) error {
	v := f.value(h)
	f.mu.Lock()
	done := !f.closed && f.active != nil && f.active.DeleteFingerprint(v)
	f.mu.Unlock()
	if done {
		return nil
	}
	if err := f.add(v|1, true); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	return nil
}

// add inserts value v (a fingerprint and its tombstone bit) into the
// active QF0, making room first when it is full (makeRoom); without
// wait, it returns ErrBusy where it would wait for another call's merge.
// A background merge's failure is returned by the next add, once.
func (f *Filter) add(v uint64, wait bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		if f.closed {
			return ErrClosed
		}
		if err := f.mergeErr; err != nil {
			f.mergeErr = nil
			return fmt.Errorf("background merge: %w", err)
		}
		if f.active == nil {
			f.active, f.spare = f.spare, nil
			if f.active == nil {
				f.active = f.newQF0()
			}
		}
		if f.active.Len() < f.sh.cap0 {
			break
		}
		if !f.wmu.TryLock() {
			if !wait {
				return ErrBusy
			}
			// A merge (or Sync, Seal, Close) holds the manifest: wait for
			// it without holding mu, which it needs to finish.
			f.mu.Unlock()
			f.waitWriter()
			f.mu.Lock()
			continue
		}
		if err := f.makeRoom(); err != nil {
			return err
		}
	}
	if err := f.active.InsertFingerprint(v); err != nil {
		return err
	}
	f.activeTombs += v & 1
	return nil
}

// Sync makes QF0's contents durable: it rewrites the manifest with them
// (atomically), after waiting for a running merge (and running again a
// merge that failed, so that the frozen QF0 is in the levels). Merged
// levels are durable when their merge commits; what the active QF0
// gained since the last Sync or Close is lost in a crash (package doc,
// "Crashes"). Insertions that find QF0 full meanwhile wait (or ErrBusy).
func (f *Filter) Sync() error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	return f.sync()
}

// waitWriter waits until whoever holds wmu (a merge, Sync, Seal or
// Close) lets it go. Called without mu.
func (f *Filter) waitWriter() {
	f.wmu.Lock()
	f.wmu.Unlock() //nolint:staticcheck // SA2001: only the wait matters: the holder's work is done when it unlocks
}

func (f *Filter) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// sync is Sync with wmu held.
func (f *Filter) sync() error {
	if f.isClosed() {
		return ErrClosed
	}
	if err := f.mergeFrozen(); err != nil {
		return fmt.Errorf("sync cascade filter %s: %w", f.dir, err)
	}
	f.mu.Lock()
	st, qf0 := f.st, f.qf0Bytes()
	f.mu.Unlock()
	if err := writeManifest(f.dir, f.sh, &st, qf0); err != nil {
		return fmt.Errorf("sync cascade filter %s: %w", f.dir, err)
	}
	return nil
}

// Close waits for a running merge, syncs QF0 (Sync), and releases the
// directory; the level files close when the last lookup reading them
// ends. If a background merge failed and fails again here, its frozen
// QF0 is lost, as in a crash, and Close returns the error.
func (f *Filter) Close() error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if f.isClosed() {
		return ErrClosed
	}
	err := f.sync()
	f.mu.Lock()
	f.closed = true
	v := f.v
	f.mu.Unlock()
	v.release()
	f.readers.close()
	return errors.Join(err, f.lock.Close())
}
