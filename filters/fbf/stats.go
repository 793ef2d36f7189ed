package fbf

import (
	"math"
	"sync/atomic"
	"time"
)

// Stats is a snapshot of an FBF for metrics.
type Stats struct {
	Filters      int           // N+2
	Refresh      time.Duration // t
	EstimatedFPP float64       // the model's estimate (EstimatedFPP) at publication
	Inserted     uint64        // elements inserted (found absent) so far
	Refreshes    uint64        // cascades so far
	ScaleUps     uint64        // Algorithm 3 increases
	ScaleDowns   uint64        // Algorithm 3 decreases
	MemoryBytes  uint64
}

// published holds the last snapshot in atomics, so Stats can run on another
// goroutine than the owner's.
type published struct {
	filters, refresh, fpp, inserted, refreshes, ups, downs, mem atomic.Uint64
}

// Publish makes the current state visible to Stats. The owner calls it
// implicitly every Adaptive.Interval of packet time; call it explicitly at
// the end of a replay.
func (f *FBF) Publish() {
	s := &f.stats
	s.filters.Store(uint64(len(f.filters)))
	s.refresh.Store(uint64(f.refresh))
	s.fpp.Store(math.Float64bits(f.EstimatedFPP()))
	s.inserted.Store(f.inserted)
	s.refreshes.Store(f.refreshes)
	s.ups.Store(f.scaleUps)
	s.downs.Store(f.scaleDowns)
	s.mem.Store(f.MemoryBytes())
}

// Stats returns the last published snapshot. Safe for concurrent use.
func (f *FBF) Stats() Stats {
	s := &f.stats
	return Stats{
		Filters:      int(s.filters.Load()),
		Refresh:      time.Duration(s.refresh.Load()),
		EstimatedFPP: math.Float64frombits(s.fpp.Load()),
		Inserted:     s.inserted.Load(),
		Refreshes:    s.refreshes.Load(),
		ScaleUps:     s.ups.Load(),
		ScaleDowns:   s.downs.Load(),
		MemoryBytes:  s.mem.Load(),
	}
}
