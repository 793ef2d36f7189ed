package fbf

import "time"

// adapt is one run of Algorithm 3 (TRIGGERDYNAMICRESIZING).
func (f *FBF) adapt(now int64) {
	a := f.opt.Adaptive
	cur := f.EstimatedFPP()
	if !a.Current {
		cur = f.projectedFPP(now)
	}
	f.tickInserted, f.tickAt = f.inserted, now
	switch {
	case cur >= 0.9*a.TargetFPP:
		// Multiplicative increase of the filters, additive decrease of t.
		grew := f.scaleUp()
		shrank := f.setRefresh(f.refresh - int64(a.RefreshStep))
		if grew || shrank {
			f.scaleUps++
		}
	case cur <= 0.1*a.TargetFPP:
		// Additive decrease of the filters, additive increase of t.
		shrank := f.scaleDown()
		grew := f.setRefresh(f.refresh + int64(a.RefreshStep))
		if grew || shrank {
			f.scaleDowns++
		}
	}
}

// projectedFPP is the model's estimate at its worst point until the next
// refresh: the future filter receives until then the insertions the last
// interval saw per nanosecond, and the estimate is taken both just before
// the refresh and just after it (when the present filter, now full, becomes
// a past filter and may stand alone as the oldest).
func (f *FBF) projectedFPP(now int64) float64 {
	var extra uint64
	if elapsed := now - f.tickAt; elapsed > 0 {
		extra = uint64(float64(f.inserted-f.tickInserted) / float64(elapsed) * float64(max(f.next-now, 0)))
	}
	p := f.scratch[:0]
	p = append(p, f.fut[:f.live]...)
	p[0] += extra
	before := f.modelFPP(p, f.opt.Model)
	// After the cascade: an empty future, everything one place older.
	live := min(f.live+1, len(f.filters))
	p = p[:live]
	copy(p[1:], p[:live-1])
	p[0] = 0
	after := f.modelFPP(p, f.opt.Model)
	f.scratch = p[:0]
	return max(before, after)
}

// minWindowOK reports whether n filters refreshed every t keep the
// guaranteed window at or above MinWindow.
func (f *FBF) minWindowOK(n int, t int64) bool {
	return time.Duration(f.windowPeriods(n)*t) >= f.opt.Adaptive.MinWindow
}

// scaleUp doubles the filter count (bounded by MaxFilters), adding empty
// filters at the past end; they join the check as the elements reach them.
func (f *FBF) scaleUp() bool {
	n := len(f.filters)
	want := min(2*n, f.opt.Adaptive.MaxFilters)
	for len(f.filters) < want {
		f.filters = append(f.filters, f.newFilter())
		f.fut = append(f.fut, 0)
	}
	return len(f.filters) > n
}

// scaleDown removes the oldest filter, keeping at least 3 (a basic FBF) and
// the minimum window.
func (f *FBF) scaleDown() bool {
	n := len(f.filters)
	if n <= 3 || !f.minWindowOK(n-1, f.refresh) {
		return false
	}
	f.spare = append(f.spare, f.filters[n-1])
	f.filters = f.filters[:n-1]
	f.fut = f.fut[:n-1]
	f.live = min(f.live, n-1)
	return true
}

// setRefresh sets t within [MinRefresh, MaxRefresh], never shortening it
// below the minimum window's floor; it reports whether t changed.
func (f *FBF) setRefresh(t int64) bool {
	a := f.opt.Adaptive
	t = min(max(t, int64(a.MinRefresh)), int64(a.MaxRefresh))
	if t < f.refresh && a.MinWindow > 0 {
		w := f.windowPeriods(len(f.filters))
		floor := (int64(a.MinWindow) + w - 1) / w
		t = max(t, min(floor, f.refresh))
	}
	if t == f.refresh {
		return false
	}
	f.refresh = t
	return true
}

// windowPeriods is the guaranteed window of n filters in periods: N+1 for
// the optimized and simple checks, N for PairsOnly.
func (f *FBF) windowPeriods(n int) int64 {
	if f.opt.Check == PairsOnly {
		return int64(n - 2)
	}
	return int64(n - 1)
}
