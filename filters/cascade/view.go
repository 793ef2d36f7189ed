package cascade

import (
	"os"
	"sync/atomic"

	"github.com/flowmon/flowmon/filters/qf"
)

// view is what a lookup reads besides the active QF0: the frozen QF0 (a
// background merge's input, read-only) and the levels, as of one freeze
// or merge. A view is never changed: a freeze or a merge installs a new
// one (under Filter.mu, together with the active QF0, so that a lookup
// sees every element once). Lookups and merges hold a reference for as
// long as they read it; the Filter holds one on the current view. A
// level is referenced by the views that name it, and is closed (and its
// file removed, once a merge has replaced it) when the last one goes:
// a lookup that started before a merge ended reads the old levels to
// its end (LevelDB's Version does the same).
type view struct {
	frozen      *qf.Filter // nil: none
	frozenTombs uint64
	levels      []*level // levels[i-1] is level i; nil when empty
	tombs       uint64   // tombstones in frozen and the levels
	refs        atomic.Int64
}

// newView makes a view, referenced once (by the Filter, as current).
func newView(frozen *qf.Filter, frozenTombs uint64, levels []*level) *view {
	v := &view{frozen: frozen, frozenTombs: frozenTombs, levels: levels, tombs: frozenTombs}
	for _, l := range levels {
		if l != nil {
			l.refs.Add(1)
			v.tombs += l.tombstones
		}
	}
	v.refs.Store(1)
	return v
}

func (v *view) acquire() { v.refs.Add(1) }

// release drops a reference; the last one drops the view's levels'.
func (v *view) release() {
	if v.refs.Add(-1) != 0 {
		return
	}
	for _, l := range v.levels {
		if l != nil {
			l.unref()
		}
	}
}

// unref drops a view's reference to l: the last one closes l, and
// removes its file if a merge replaced it (a crash before that leaves
// the file to Open, which removes the files the manifest does not name).
func (l *level) unref() {
	if l.refs.Add(-1) != 0 {
		return
	}
	l.close() // read-only files: nothing is lost if closing fails
	if l.obsolete.Load() {
		os.Remove(l.path)
	}
}
