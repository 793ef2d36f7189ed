package rules

import (
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
)

// endDupWindow checks a duplicates rule when packet time t has left its
// window (or, final, when the replay ends inside one): the share of
// packets the dedup stage dropped in the window fires the alert, or
// resolves it when it stayed below. The counts are the shards' running
// totals, so a window is what they grew by since its start (each shard
// publishes them once a second of packet time and before it ticks: a
// window's edge may shift by up to that). Called with the engine's lock
// held, or by the last shard to finish.
func (e *Engine) endDupWindow(r *rule, t int64, final bool) {
	w := r.st.win
	i, _ := w.at(t)
	_, ended, gap, ok := w.advance(i)
	if !ok && !final {
		return
	}
	var dups, total uint64
	for _, s := range e.shards {
		d := s.dups.Load()
		dups += d
		total += d + s.packets.Load()
	}
	st := r.st
	dups, total, st.dupMark, st.totalMark = dups-st.dupMark, total-st.totalMark, dups, total
	if final {
		ended = i
	}
	end := time.Unix(0, (ended+1)*w.size)
	if final {
		end = time.Unix(0, t)
	}
	share := 0.0
	if total > 0 {
		share = float64(dups) / float64(total)
	}
	holds := !gap && total >= r.Duplicates.MinPackets && share > r.Duplicates.Above
	if !holds {
		e.mgr.Check(r.Alert, end, func(uint64, time.Time) bool { return false })
		return
	}
	o := r.occurrence(alertHash(r.id, 0), 0, end)
	if !e.mgr.Fold(o, 1) {
		e.mgr.Fire(o, r.build(capture.Key{}, acsm.ConnUnknown, 0, end.UnixNano(), share, 0))
	}
}
