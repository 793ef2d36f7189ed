package cascade

import (
	"fmt"
	"os"
	"path/filepath"

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

// merge is the COLA step (Section 2, Figure 2): QF0 is full; find the
// smallest empty level i, merge QF0 and levels 1..i-1 (all non-empty)
// into it in one sequential pass and write it front to back, then empty
// them. Live copies and tombstones of one fingerprint cancel as they
// meet; tombstones left over go down with the merge unless no level
// below i holds anything (then nothing older is left for them to cancel).
//
// The new level is written and synced, then opened and checked, then the
// manifest naming it (and no longer the merged levels) replaces the old
// one; only then are QF0 emptied and the old files removed. A crash or
// an error at any point leaves the old manifest and its files, or the
// new ones: Open removes the files the manifest does not name.
func (f *Filter) merge() error {
	i := 1
	for i <= len(f.levels) && f.levels[i-1] != nil {
		i++
	}
	q, r := f.sh.levelShape(i)
	if i > f.sh.maxLevel || q > qf.MaxQuotientBits {
		return fmt.Errorf("merge into level %d: %d-bit fingerprints allow %d levels: %w", i, f.sh.p, f.sh.maxLevel, ErrFull)
	}
	deeper := false
	for _, l := range f.levels[min(i, len(f.levels)):] {
		deeper = deeper || l != nil
	}
	m := levelMeta{level: i, gen: f.st.nextGen, q: q, r: r}
	path := filepath.Join(f.dir, m.name())
	lw, err := createLevel(path)
	if err != nil {
		return fmt.Errorf("merge into level %d: %w", i, err)
	}
	if err := f.writeMerge(lw, &m, deeper); err != nil {
		lw.abort()
		return fmt.Errorf("merge into level %d: %w", i, err)
	}
	nl, err := openLevel(f.dir, m, true, f.opts.Uncached)
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("merge into level %d: %w", i, err)
	}
	ns := state{nextGen: m.gen + 1, merges: f.st.merges + 1, levels: []levelMeta{m}}
	for _, l := range f.levels[min(i, len(f.levels)):] {
		if l != nil {
			ns.levels = append(ns.levels, l.levelMeta)
		}
	}
	if err := writeManifest(f.dir, f.sh, &ns, nil); err != nil {
		nl.close()
		os.Remove(path)
		return fmt.Errorf("merge into level %d: %w", i, err)
	}
	f.st = ns
	f.qf0.Reset()
	f.qf0Tombs = 0
	f.written += m.fileSize()
	for j := range min(i-1, len(f.levels)) {
		old := f.levels[j]
		old.close()
		os.Remove(old.path)
		f.levels[j] = nil
	}
	f.setLevel(nl)
	return nil
}

// writeMerge streams the merged values into lw, filling m.
func (f *Filter) writeMerge(lw *levelWriter, m *levelMeta, deeper bool) error {
	w, err := qf.NewWriter(m.q, m.r, lw.words)
	if err != nil {
		return err
	}
	c := f.qf0.Cursor()
	srcs := []source{{next: c.Next, err: c.Err}}
	for _, l := range f.levels[:min(m.level-1, len(f.levels))] {
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
			if deeper {
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
