package cascade

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/flowmon/flowmon/filters/qf"
)

// source is one sorted stream of values in a merge: QF0's cursor or a
// level's reader.
type source struct {
	next func() (uint64, bool)
	err  func() error
	head uint64
	ok   bool
}

// mergeJob is one COLA step (Section 2, Figure 2): src, a QF0 no one
// inserts into any more, and levels 1..i-1 of v (all non-empty) merged
// into level i, the smallest empty one, in one sequential pass.
type mergeJob struct {
	src       *qf.Filter
	v         *view // referenced for the merge's length
	i         int
	deeper    bool      // a level below i holds something
	st        state     // the manifest's state once the merge commits
	level     levelMeta // level i as written
	levelFile *level    // and opened
	began     time.Time // wall time, for Stats.MergeTime
}

// mergeStage is where a merge is when it calls Filter.hook (tests: a
// hook may hold a merge at a stage, or end its goroutine there as a crash
// would).
type mergeStage uint8

const (
	// stageStart: the merge is planned and QF0 frozen; nothing written.
	stageStart mergeStage = iota
	// stageWritten: the level file is written and synced; the manifest
	// does not name it yet.
	stageWritten
	// stageCommitted: the manifest names the new level; lookups do not
	// read it yet.
	stageCommitted
)

func (s mergeStage) String() string {
	switch s {
	case stageStart:
		return "start"
	case stageWritten:
		return "written"
	case stageCommitted:
		return "committed"
	}
	return fmt.Sprintf("mergeStage(%d)", uint8(s))
}

func (f *Filter) at(s mergeStage) {
	if f.hook != nil {
		f.hook(s)
	}
}

// plan finds the level a merge of QF0 writes: the smallest empty one.
// Called with mu and wmu held (the levels do not change under wmu).
func (f *Filter) plan() (i int, deeper bool, err error) {
	ls := f.v.levels
	i = 1
	for i <= len(ls) && ls[i-1] != nil {
		i++
	}
	if q, _ := f.sh.levelShape(i); i > f.sh.maxLevel || q > qf.MaxQuotientBits {
		return 0, false, fmt.Errorf("merge into level %d: %d-bit fingerprints allow %d levels: %w", i, f.sh.p, f.sh.maxLevel, ErrFull)
	}
	for _, l := range ls[min(i, len(ls)):] {
		deeper = deeper || l != nil
	}
	return i, deeper, nil
}

// job plans the merge of src, referencing the current view for it.
// Called with mu and wmu held.
func (f *Filter) job(src *qf.Filter) (*mergeJob, error) {
	i, deeper, err := f.plan()
	if err != nil {
		return nil, err
	}
	f.v.acquire()
	return &mergeJob{src: src, v: f.v, i: i, deeper: deeper, began: time.Now()}, nil
}

// freeze makes the active QF0 the frozen one, which lookups go on
// reading while a merge writes it into the levels, and next (nil: one
// allocated when needed) the active one. Called with mu and wmu held,
// no QF0 frozen.
func (f *Filter) freeze(next *qf.Filter) {
	f.install(newView(f.active, f.activeTombs, f.v.levels))
	f.active, f.activeTombs = next, 0
}

// install makes v the current view. Called with mu held.
func (f *Filter) install(v *view) {
	old := f.v
	f.v = v
	old.release()
}

// makeRoom is called with mu and wmu held and the active QF0 full. With
// SyncMerge it merges QF0 into the levels holding both, so that every
// call on the filter waits, as in the paper. Otherwise it freezes QF0
// (the spare, or a QF0 allocated later, takes its place) and hands its
// merge to a goroutine, which holds wmu until the merge ends; if a QF0 is
// still frozen (its merge failed, and add reported it), its merge is run
// again, and the active QF0 stays full until it ends.
func (f *Filter) makeRoom() error {
	if f.opts.SyncMerge {
		defer f.wmu.Unlock()
		src := f.active
		if f.v.frozen != nil { // left by a Seal whose merge failed: first
			src = f.v.frozen
		}
		j, err := f.job(src)
		if err != nil {
			return err
		}
		defer j.v.release()
		f.at(stageStart)
		if err := f.merge(j); err != nil {
			return err
		}
		f.commit(j)
		return nil
	}
	if f.v.frozen == nil {
		if _, _, err := f.plan(); err != nil {
			f.wmu.Unlock()
			return err
		}
		f.freeze(f.spare)
		f.spare = nil
	}
	j, err := f.job(f.v.frozen)
	if err != nil {
		f.wmu.Unlock()
		return err
	}
	go f.background(j)
	return nil
}

// background runs a merge on its own goroutine, holding wmu (handed over
// by makeRoom). A failure keeps the QF0 frozen (lookups still read it)
// and is reported by the next insertion, which runs the merge again.
func (f *Filter) background(j *mergeJob) {
	defer f.wmu.Unlock()
	if err := f.run(j, true); err != nil {
		f.mu.Lock()
		f.mergeErr = err
		f.mu.Unlock()
	}
}

// mergeFrozen merges the frozen QF0, if one is (its background merge
// failed), on the calling goroutine. Called with wmu held.
func (f *Filter) mergeFrozen() error {
	f.mu.Lock()
	if f.v.frozen == nil {
		f.mu.Unlock()
		return nil
	}
	j, err := f.job(f.v.frozen)
	f.mu.Unlock()
	if err != nil {
		return err
	}
	return f.run(j, false)
}

// run merges j's frozen QF0, holding wmu but not mu, so that lookups and
// insertions go on; it then allocates the next spare QF0 if asked, and
// installs the merge.
func (f *Filter) run(j *mergeJob, spare bool) error {
	defer j.v.release()
	f.at(stageStart)
	if err := f.merge(j); err != nil {
		return err
	}
	var next *qf.Filter
	if spare {
		next = f.newQF0()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commit(j)
	if f.spare == nil {
		f.spare = next
	}
	return nil
}

// merge writes level j.i from j.src and levels 1..j.i-1 in one
// sequential pass: live copies and tombstones of one fingerprint cancel
// as they meet; tombstones left over go down with the merge unless no
// level below i holds anything (then nothing older is left for them to
// cancel). The new level is written and synced, then opened and checked,
// then the manifest naming it (and no longer the merged levels, nor any
// QF0: the merged one was the only one the last manifest could hold)
// replaces the old one: the commit. A crash or an error at any point
// before leaves the old manifest and its files; Open removes the files
// the manifest does not name. Called with wmu held; j.src is read-only.
func (f *Filter) merge(j *mergeJob) error {
	q, r := f.sh.levelShape(j.i)
	m := levelMeta{level: j.i, gen: f.st.nextGen, q: q, r: r}
	path := filepath.Join(f.dir, m.name())
	lw, err := createLevel(path)
	if err != nil {
		return fmt.Errorf("merge into level %d: %w", j.i, err)
	}
	if err := f.writeMerge(lw, &m, j); err != nil {
		lw.abort()
		return fmt.Errorf("merge into level %d: %w", j.i, err)
	}
	f.at(stageWritten)
	nl, err := openLevel(f.dir, m, true, f.opts.Uncached)
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("merge into level %d: %w", j.i, err)
	}
	ns := state{nextGen: m.gen + 1, merges: f.st.merges + 1, levels: []levelMeta{m}}
	for _, l := range j.v.levels[min(j.i, len(j.v.levels)):] {
		if l != nil {
			ns.levels = append(ns.levels, l.levelMeta)
		}
	}
	if err := writeManifest(f.dir, f.sh, &ns, nil); err != nil {
		nl.close()
		os.Remove(path)
		return fmt.Errorf("merge into level %d: %w", j.i, err)
	}
	f.at(stageCommitted)
	j.st, j.level = ns, m
	j.levelFile = nl
	return nil
}

// commit installs a committed merge: the view with level j.i and without
// the merged levels (their files are removed when the last lookup reading
// them ends) nor the merged QF0 (emptied, if it was the active one: a
// synchronous merge). Called with mu and wmu held.
func (f *Filter) commit(j *mergeJob) {
	f.st = j.st
	f.written += j.level.fileSize()
	d := time.Since(j.began)
	f.mergeTime += d
	f.longest = max(f.longest, d)
	levels := slices.Clone(f.v.levels)
	for k := range min(j.i-1, len(levels)) {
		levels[k].obsolete.Store(true)
		levels[k] = nil
	}
	levels = setLevel(levels, j.levelFile)
	frozen, tombs := f.v.frozen, f.v.frozenTombs
	if j.src == frozen {
		frozen, tombs = nil, 0
	} else {
		f.active.Reset()
		f.activeTombs = 0
	}
	f.install(newView(frozen, tombs, levels))
}

// Seal merges what QF0 holds into the levels and frees QF0's memory,
// after waiting for a running merge: a Filter no longer inserted into
// (the flow history's past generations) then keeps only its levels' page
// checksums in RAM. Lookups go on meanwhile. An insertion after Seal
// allocates QF0 again.
func (f *Filter) Seal() error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if f.isClosed() {
		return ErrClosed
	}
	if err := f.mergeFrozen(); err != nil {
		return fmt.Errorf("seal cascade filter %s: %w", f.dir, err)
	}
	f.mu.Lock()
	if f.active != nil && f.active.Len() > 0 {
		if _, _, err := f.plan(); err != nil {
			f.mu.Unlock()
			return fmt.Errorf("seal cascade filter %s: %w", f.dir, err)
		}
		f.freeze(nil)
	}
	f.active, f.spare = nil, nil
	f.mu.Unlock()
	if err := f.mergeFrozen(); err != nil {
		return fmt.Errorf("seal cascade filter %s: %w", f.dir, err)
	}
	return nil
}

// writeMerge streams the merged values into lw, filling m.
func (f *Filter) writeMerge(lw *levelWriter, m *levelMeta, j *mergeJob) error {
	w, err := qf.NewWriter(m.q, m.r, lw.words)
	if err != nil {
		return err
	}
	c := j.src.Cursor()
	srcs := []source{{next: c.Next, err: c.Err}}
	for _, l := range j.v.levels[:min(m.level-1, len(j.v.levels))] {
		rd, err := l.reader()
		if err != nil {
			return err
		}
		srcs = append(srcs, source{next: rd.Next, err: rd.Err})
	}
	for j := range srcs {
		srcs[j].head, srcs[j].ok = srcs[j].next()
	}
	var (
		cur        uint64
		live, tomb uint64
		have       bool
	)
	emit := func() error {
		v, n := cur<<1, live-tomb
		if tomb > live {
			n = 0
			if j.deeper {
				v, n = v|1, tomb-live
				m.tombstones += n
			}
		}
		for range n {
			if err := w.Add(v); err != nil {
				return err
			}
		}
		m.entries += n
		return nil
	}
	for {
		best := -1
		for j := range srcs {
			if srcs[j].ok && (best < 0 || srcs[j].head < srcs[best].head) {
				best = j
			}
		}
		if best < 0 {
			break
		}
		s := &srcs[best]
		v := s.head
		s.head, s.ok = s.next()
		if have && v>>1 != cur {
			if err := emit(); err != nil {
				return err
			}
			live, tomb = 0, 0
		}
		cur, have = v>>1, true
		if v&1 == 0 {
			live++
		} else {
			tomb++
		}
	}
	for _, s := range srcs {
		if err := s.err(); err != nil {
			return err
		}
	}
	if have {
		if err := emit(); err != nil {
			return err
		}
	}
	slots, err := w.Close()
	if err != nil {
		return err
	}
	m.slots = slots
	return lw.finish(m, f.opts.Uncached)
}
