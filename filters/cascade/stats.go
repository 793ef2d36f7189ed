package cascade

import (
	"math"
	"slices"
	"time"

	"github.com/flowmon/flowmon/filters/qf"
)

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
	QF0Slots        uint64       // a QF0's
	QF0Capacity     uint64       // a QF0's fingerprints before a merge
	QF0Items        uint64       // in the active QF0
	FrozenItems     uint64       // in the frozen QF0 a background merge is writing into the levels
	Merging         bool         // a QF0 is frozen (its merge running, or failed and to run again)
	QF0Bytes        uint64       // the QF0s' slots in RAM: the active, the frozen and the spare
	Levels          []LevelStats // the non-empty levels, smallest first
	Items           uint64       // fingerprints in the QF0s and the levels, tombstones included
	Tombstones      uint64
	RAMBytes        uint64 // the QF0s' slots and the levels' page checksums
	DiskBytes       uint64 // the level files
	Merges          uint64 // since the directory was made
	BytesWritten    uint64 // level bytes written by merges since Open
	// MergeTime is the wall time merges took since Open, each from its
	// start (the freeze, with background merges) to its commit;
	// LongestMerge the longest. With background merges no insertion
	// waits for a merge as long as QF0Capacity insertions take longer
	// than LongestMerge.
	MergeTime, LongestMerge time.Duration
	PageReads               uint64 // level pages read by lookups since Open
	Dropped                 []LevelError
}

// Stats returns f's figures.
func (f *Filter) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := Stats{
		FingerprintBits: f.sh.p, QF0Slots: 1 << f.sh.q0, QF0Capacity: f.sh.cap0, Tombstones: f.activeTombs + f.v.frozenTombs,
		Merging: f.v.frozen != nil, Merges: f.st.merges, BytesWritten: f.written, PageReads: f.readers.reads.Load(),
		MergeTime: f.mergeTime, LongestMerge: f.longest,
		Dropped: slices.Clone(f.dropped),
	}
	if f.active != nil {
		s.QF0Items = f.active.Len()
	}
	if f.v.frozen != nil {
		s.FrozenItems = f.v.frozen.Len()
	}
	for _, g := range []*qf.Filter{f.active, f.v.frozen, f.spare} {
		if g != nil {
			s.QF0Bytes += g.MemoryBytes()
		}
	}
	s.Items = s.QF0Items + s.FrozenItems
	s.RAMBytes = s.QF0Bytes
	for _, l := range f.v.levels {
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
