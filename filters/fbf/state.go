package fbf

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/flowmon/flowmon/filters/bloom"
	"github.com/flowmon/flowmon/internal/snapshot"
)

// State format, version 1 (little-endian):
//
//	"FBF" 1            tag and version
//	params             the constituent shape (m, k, blocked), N, the
//	                   check, the model, the configured period and the
//	                   adaptive settings
//	8 8 8              filters n (N+2 now), spares, live filters
//	12 x 8             period t (ns); clock started; current period's
//	                   start; next refresh; next tick; inserted; refreshes;
//	                   scale-ups; scale-downs; inserted at the last tick;
//	                   last tick's time; (reserved, 0)
//	n x 8              insertions each filter received as the future one
//	8 x 8              the published Stats (atomics, as Stats reads them)
//	n x (8 + filter)   each filter's bloom.Filter.AppendBinary, future
//	                   first, length first
//
// The filters' order is their age, and the clock (start, next refresh,
// next tick) says when the next cascade and adaptation happen, so a
// restored FBF forgets, answers and resizes at the same packets as the
// original. Spare filters (kept by a scale-down for reuse) are empty by
// construction: only their number is kept, for MemoryBytes.
const (
	stateTag     = "FBF"
	stateVersion = 1
)

func (f *FBF) stateParams() []snapshot.Param {
	o, a := f.opt, f.opt.Adaptive
	P := snapshot.P
	return []snapshot.Param{
		P("bits", f.m), P("hashes", f.k), P("blocked", o.Blocked), P("past", o.Past),
		P("check", o.Check), P("model", o.Model), P("refresh", o.Refresh),
		P("target_fpp", a.TargetFPP), P("interval", a.Interval), P("refresh_step", a.RefreshStep),
		P("min_refresh", a.MinRefresh), P("max_refresh", a.MaxRefresh), P("max_filters", a.MaxFilters),
		P("min_window", a.MinWindow), P("current", a.Current),
	}
}

// maxState is the most filters, spares included, the FBF can hold.
func (f *FBF) maxState() int { return max(f.opt.Past+2, f.opt.Adaptive.MaxFilters) }

// AppendState appends the FBF's state: every constituent filter, the
// period clock, the adaptation's state and the counters, with the shape
// they belong to. The owner goroutine calls it, as it calls TestAndAdd.
func (f *FBF) AppendState(b []byte) ([]byte, error) {
	b = snapshot.AppendTag(b, stateTag, stateVersion)
	b = snapshot.AppendParams(b, f.stateParams())
	for _, x := range [...]uint64{uint64(len(f.filters)), uint64(len(f.spare)), uint64(f.live),
		uint64(f.refresh), b2u(f.started), uint64(f.start), uint64(f.next), uint64(f.nextTick), f.inserted,
		f.refreshes, f.scaleUps, f.scaleDowns, f.tickInserted, uint64(f.tickAt), 0} {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	b = snapshot.AppendUint64s(b, f.fut)
	s := &f.stats
	for _, x := range [...]*atomic.Uint64{&s.filters, &s.refresh, &s.fpp, &s.inserted, &s.refreshes, &s.ups, &s.downs, &s.mem} {
		b = binary.LittleEndian.AppendUint64(b, x.Load())
	}
	for _, bf := range f.filters {
		var err error
		if b, err = snapshot.AppendBlob(b, bf.AppendBinary); err != nil {
			return b, fmt.Errorf("save fbf: %w", err)
		}
	}
	return b, nil
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// RestoreState replaces the FBF's state with the one AppendState wrote in
// b, from an FBF of the same options (else an error wrapping
// snapshot.ErrIncompatible names the option that differs). On error the
// FBF is unchanged; the filters are decoded into new memory first.
func (f *FBF) RestoreState(b []byte) error {
	d := snapshot.NewDecoder("fbf", b)
	d.Tag(stateTag, stateVersion)
	d.Params(f.stateParams())
	limit := uint64(f.maxState())
	n, spares, live := d.U64(), d.U64(), d.U64()
	var w [12]uint64
	for i := range w {
		w[i] = d.U64()
	}
	if d.Err() != nil {
		return d.Err()
	}
	switch {
	case n < 3 || n > limit || (f.opt.Adaptive.TargetFPP == 0 && n != uint64(f.opt.Past+2)):
		d.Failf("%d filters (N+2 is %d, at most %d)", n, f.opt.Past+2, limit)
	case spares > limit-n:
		d.Failf("%d filters and %d spares, at most %d", n, spares, limit)
	case live < 1 || live > n:
		d.Failf("%d live filters of %d", live, n)
	case int64(w[0]) <= 0 || int64(w[0]) > maxClock:
		d.Failf("refresh period %d ns", int64(w[0]))
	case w[1] > 1 || w[11] != 0:
		d.Failf("bad clock flags")
	case w[1] == 1 && !clockOK(int64(w[0]), int64(w[2]), int64(w[3]), int64(w[4]), int64(w[10])):
		// A started clock's next refresh is one period after its start
		// (advance, catchUp and adapt keep it so), and its times are
		// packet times: far from the ends of int64, so that the period
		// arithmetic of catchUp cannot overflow.
		d.Failf("clock: period %d ns, start %d, next refresh %d, next tick %d, last tick %d",
			int64(w[0]), int64(w[2]), int64(w[3]), int64(w[4]), int64(w[10]))
	}
	if d.Err() != nil {
		return d.Err()
	}
	fut := make([]uint64, n, max(int(n), f.opt.Adaptive.MaxFilters))
	d.Uint64s(fut)
	var pub [8]uint64
	for i := range pub {
		pub[i] = d.U64()
	}
	filters := make([]*bloom.Filter, 0, n)
	for i := range n {
		blob := d.Blob()
		if d.Err() != nil {
			break
		}
		bf := new(bloom.Filter)
		if err := bf.UnmarshalBinary(blob); err != nil {
			d.Failf("filter %d: %v", i, err)
			break
		}
		if bf.Bits() != f.m || bf.Hashes() != f.k || bf.Blocked() != f.opt.Blocked {
			d.Failf("filter %d: %d bits, %d hashes, blocked %t; the others %d, %d, %t", i,
				bf.Bits(), bf.Hashes(), bf.Blocked(), f.m, f.k, f.opt.Blocked)
			break
		}
		filters = append(filters, bf)
	}
	if err := d.Done(); err != nil {
		return err
	}
	spare := make([]*bloom.Filter, 0, spares)
	for range spares {
		spare = append(spare, f.emptyFilter())
	}
	f.filters, f.fut, f.spare, f.live = filters, fut, spare, int(live)
	f.refresh, f.started, f.start, f.next, f.nextTick = int64(w[0]), w[1] == 1, int64(w[2]), int64(w[3]), int64(w[4])
	f.inserted, f.refreshes, f.scaleUps, f.scaleDowns = w[5], w[6], w[7], w[8]
	f.tickInserted, f.tickAt = w[9], int64(w[10])
	s := &f.stats
	for i, x := range [...]*atomic.Uint64{&s.filters, &s.refresh, &s.fpp, &s.inserted, &s.refreshes, &s.ups, &s.downs, &s.mem} {
		x.Store(pub[i])
	}
	return nil
}

// maxClock bounds the clock's times and period in a restored state:
// 2^61 ns is 73 years either side of 1970.
const maxClock = 1 << 61

func clockOK(refresh, start, next, nextTick, tickAt int64) bool {
	in := func(x int64) bool { return x >= -maxClock && x <= maxClock }
	return in(start) && in(nextTick) && in(tickAt) && next == start+refresh
}

// emptyFilter is a constituent filter of f's shape that no one uses.
func (f *FBF) emptyFilter() *bloom.Filter {
	b, err := bloom.NewWithOptions(bloom.Options{Bits: f.m, Hashes: f.k, Blocked: f.opt.Blocked})
	if err != nil { // the shape was validated by Options.Shape
		panic(fmt.Sprintf("fbf: validated shape rejected: %v", err))
	}
	return b
}
