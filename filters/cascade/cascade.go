package cascade

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flowmon/flowmon/filters/qf"
	"github.com/flowmon/flowmon/internal/snapshot"
)

// Filter is a Cascade Filter kept in a directory. See the package doc.
// Not safe for concurrent use.
type Filter struct {
	dir      string
	opts     Options
	sh       shape
	lock     *os.File
	qf0      *qf.Filter
	qf0Tombs uint64
	st       state
	levels   []*level // levels[i-1] is level i; nil when empty
	sr       *slotReader
	written  uint64 // level bytes written by merges
	dropped  []LevelError
	closed   bool
}

// Open opens the Cascade Filter in dir, creating the directory and an
// empty filter if there is none. A directory made with other options is
// refused (ErrIncompatible, naming the first that differs); a damaged
// manifest is refused (ErrCorrupt); a damaged level is refused with a
// *LevelError naming it, or dropped with Options.DropDamaged. Files of
// merges a crash interrupted are removed.
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
	f := &Filter{dir: dir, opts: o, sh: sh, lock: lock, sr: newSlotReader()}
	if err := f.load(); err != nil {
		f.closeLevels()
		f.sr.free()
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

// load reads the manifest, QF0 and the levels.
func (f *Filter) load() error {
	_, secs, err := snapshot.Read(manifestPath(f.dir), f.sh.params(), 0, time.Now())
	switch {
	case errors.Is(err, snapshot.ErrMissing):
		if names := f.levelFiles(); len(names) > 0 {
			return fmt.Errorf("no %s but %d level files (%s): %w", manifestName, len(names), names[0], ErrCorrupt)
		}
		f.qf0 = f.newQF0()
		f.st = state{nextGen: 1}
		return f.Sync()
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
	f.qf0 = f.newQF0()
	if len(qf0) > 0 {
		var g qf.Filter
		if err := g.UnmarshalBinary(qf0); err != nil {
			return fmt.Errorf("%s: QF0: %w: %w", manifestName, ErrCorrupt, err)
		}
		if g.QuotientBits() != f.sh.q0 || g.FingerprintBits() != f.sh.v || g.Len() > f.sh.cap0 {
			return fmt.Errorf("%s: QF0 of 2^%d slots, %d-bit values, %d fingerprints: %w",
				manifestName, g.QuotientBits(), g.FingerprintBits(), g.Len(), ErrCorrupt)
		}
		f.qf0 = &g
		for v := range g.All() {
			f.qf0Tombs += v & 1
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
			os.Rename(le.Path, le.Path+".damaged")
			f.dropped = append(f.dropped, *le)
			continue
		}
		f.setLevel(l)
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

func (f *Filter) setLevel(l *level) {
	for len(f.levels) < l.level {
		f.levels = append(f.levels, nil)
	}
	f.levels[l.level-1] = l
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

func (f *Filter) qf0Bytes() []byte {
	if f.qf0.Len() == 0 {
		return nil
	}
	b, _ := f.qf0.MarshalBinary()
	return b
}

func (f *Filter) value(h uint64) uint64 { return qf.Fingerprint(h, f.sh.p) << 1 }

// Insert adds the element with hash h (a multiset: twice is twice). When
// QF0 is full it first merges QF0 and the levels above the first empty
// one into it, writing that level sequentially: an Insert then takes as
// long as the merge.
func (f *Filter) Insert(h uint64) error {
	if f.closed {
		return ErrClosed
	}
	if err := f.makeRoom(); err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	return f.qf0.InsertFingerprint(f.value(h))
}

// Delete removes one copy of the element with hash h: from QF0 if it
// holds one, else by inserting a tombstone into QF0 that cancels one copy
// in a level when the two meet in a merge, and that lookups subtract
// meanwhile. Delete does not look the element up on disk (that would cost
// a lookup's reads): deleting an element that was not inserted is the
// caller's error, and hides a later copy of any element with its
// fingerprint (a false negative), as in any AMQ that deletes.
func (f *Filter) Delete(h uint64) error {
	if f.closed {
		return ErrClosed
	}
	v := f.value(h)
	if f.qf0.DeleteFingerprint(v) {
		return nil
	}
	if err := f.makeRoom(); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if err := f.qf0.InsertFingerprint(v | 1); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	f.qf0Tombs++
	return nil
}

func (f *Filter) makeRoom() error {
	if f.qf0.Len() < f.sh.cap0 {
		return nil
	}
	return f.merge()
}

// Contains reports whether the element with hash h may be in the filter:
// QF0 first, then each level from the smallest, reading the pages of the
// level's file that the walk to h's run needs (usually one). Without
// tombstones it stops at the first copy; with tombstones anywhere it
// reads every level and reports whether the copies outnumber the
// tombstones. An error (a read failing, a page whose checksum does not
// match: a *LevelError) leaves the answer unknown.
func (f *Filter) Contains(h uint64) (bool, error) {
	n, err := f.count(h, f.tombstones() == 0)
	return n > 0, err
}

// Count is the number of copies of h's fingerprint stored (inserted and
// not deleted, over every level): a multiset count, over-counted only by
// colliding fingerprints.
func (f *Filter) Count(h uint64) (uint64, error) {
	n, err := f.count(h, false)
	return uint64(max(n, 0)), err
}

func (f *Filter) count(h uint64, firstCopy bool) (int64, error) {
	if f.closed {
		return 0, ErrClosed
	}
	v := f.value(h)
	n := int64(f.qf0.CountFingerprint(v)) - int64(f.qf0.CountFingerprint(v|1))
	for _, l := range f.levels {
		if firstCopy && n > 0 {
			return n, nil
		}
		if l == nil {
			continue
		}
		live, tomb, err := f.sr.count(l, v>>1)
		if err != nil {
			return 0, fmt.Errorf("lookup: %w", err)
		}
		n += int64(live) - int64(tomb)
	}
	return n, nil
}

func (f *Filter) tombstones() uint64 {
	t := f.qf0Tombs
	for _, l := range f.levels {
		if l != nil {
			t += l.tombstones
		}
	}
	return t
}

// Sync makes QF0's contents durable: it rewrites the manifest with them
// (atomically). Merged levels are durable when their merge returns; what
// QF0 gained since the last Sync, Close or merge is lost in a crash.
func (f *Filter) Sync() error {
	if f.closed {
		return ErrClosed
	}
	if err := writeManifest(f.dir, f.sh, &f.st, f.qf0Bytes()); err != nil {
		return fmt.Errorf("sync cascade filter %s: %w", f.dir, err)
	}
	return nil
}

// Close syncs QF0 (Sync), closes the level files and releases the
// directory.
func (f *Filter) Close() error {
	if f.closed {
		return ErrClosed
	}
	err := f.Sync()
	f.closed = true
	f.sr.free()
	return errors.Join(err, f.closeLevels(), f.lock.Close())
}

func (f *Filter) closeLevels() error {
	var err error
	for _, l := range f.levels {
		if l != nil {
			err = errors.Join(err, l.close())
		}
	}
	return err
}

// LevelStats describes one level.
type LevelStats struct {
	Level      int
	Items      uint64 // fingerprints, tombstones included
	Tombstones uint64
	Slots      uint64 // 2^q and the overflow
	Load       float64
	Bytes      uint64 // the file's size
}

// Stats describes a Filter.
type Stats struct {
	FingerprintBits uint
	QF0Slots        uint64
	QF0Capacity     uint64 // QF0's fingerprints before a merge
	QF0Items        uint64
	QF0Bytes        uint64       // QF0's slots in RAM
	Levels          []LevelStats // the non-empty levels, smallest first
	Items           uint64       // fingerprints in QF0 and the levels, tombstones included
	Tombstones      uint64
	RAMBytes        uint64 // QF0's slots and the levels' page checksums
	DiskBytes       uint64 // the level files
	Merges          uint64 // since the directory was made
	BytesWritten    uint64 // level bytes written by merges since Open
	PageReads       uint64 // level pages read by lookups since Open
	Dropped         []LevelError
}

// Stats returns f's figures.
func (f *Filter) Stats() Stats {
	s := Stats{
		FingerprintBits: f.sh.p, QF0Slots: f.qf0.Slots(), QF0Capacity: f.sh.cap0, QF0Items: f.qf0.Len(),
		QF0Bytes: f.qf0.MemoryBytes(), Items: f.qf0.Len(), Tombstones: f.qf0Tombs, RAMBytes: f.qf0.MemoryBytes(),
		Merges: f.st.merges, BytesWritten: f.written, PageReads: f.sr.reads, Dropped: slices.Clone(f.dropped),
	}
	for _, l := range f.levels {
		if l == nil {
			continue
		}
		s.Levels = append(s.Levels, LevelStats{Level: l.level, Items: l.entries, Tombstones: l.tombstones,
			Slots: l.slots, Load: float64(l.entries) / math.Ldexp(1, int(l.q)), Bytes: l.fileSize()})
		s.Items += l.entries
		s.Tombstones += l.tombstones
		s.RAMBytes += 4 * uint64(len(l.crcs))
		s.DiskBytes += l.fileSize()
	}
	return s
}

// EstimatedFPRate is the paper's false-positive rate of f: 1 - e^(-n/2^p)
// for n fingerprints stored (tombstones counted, an upper bound).
func (f *Filter) EstimatedFPRate() float64 {
	s := f.Stats()
	return -math.Expm1(-float64(s.Items) / math.Ldexp(1, int(f.sh.p)))
}
