package dedup

import (
	"fmt"
	"time"

	"github.com/flowmon/flowmon/filters/fbf"
	"github.com/flowmon/flowmon/filters/recent"
)

// window is a window of recent fingerprints, as the stage uses one: the
// fingerprint table (filters/recent), the default, or the paper's
// Forgetful Bloom Filter (filters/fbf, Config.FBF), kept to be measured
// beside it.
type window interface {
	TestAndAdd(h uint64, now time.Time) bool
	Prefetch(h uint64)
	Publish()
	Stats() WindowStats
	MemoryBytes() uint64
	EstimatedFPP() float64
	AppendState(b []byte) ([]byte, error)
	RestoreState(b []byte) error
}

// Structures of a window (WindowStats.Structure).
const (
	StructureTable = "table"
	StructureFBF   = "fbf"
)

// WindowStats is a snapshot of a window for metrics.
type WindowStats struct {
	Structure    string  // StructureTable or StructureFBF
	EstimatedFPP float64 // the false-positive estimate at publication
	MemoryBytes  uint64
	// The table's: cells overwritten while their fingerprint was still in
	// the window (its duplicates, had they come, would have been missed).
	Overwritten uint64
	// The FBF's (see fbf.Stats).
	FBF fbf.Stats
}

// newWindow builds the duplicate window c asks for: held for at least
// c.Window, sized for c.PacketsPerWindow fingerprints in it, wrongly found
// at a rate c.FPRate at most.
func newWindow(c Config) (window, error) {
	if c.FBF {
		f, err := newFBF(c.Window, c.PacketsPerWindow, c.FPRate, c.Past, !c.Standard)
		if err != nil {
			return nil, err
		}
		return fbfWindow{f}, nil
	}
	if b := recent.FalsePositiveBound(); c.FPRate < b {
		return nil, fmt.Errorf("fp rate %g is below the fingerprint table's bound %.2g (use the FBF): %w", c.FPRate, b, ErrInvalidConfig)
	}
	t, err := recent.New(recent.Options{Window: c.Window, Expected: c.PacketsPerWindow})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, ErrInvalidConfig)
	}
	return tableWindow{t}, nil
}

// newFBF sizes an FBF that remembers for at least window: t =
// window/(N+1), and packetsPerWindow/(N+1) insertions per period.
func newFBF(window time.Duration, packets uint64, fp float64, past int, blocked bool) (*fbf.FBF, error) {
	per := (packets + uint64(past)) / uint64(past+1)
	f, err := fbf.NewWithOptions(fbf.Options{
		ElementsPerPeriod: max(per, 1),
		FPRate:            fp,
		Past:              past,
		Refresh:           window / time.Duration(past+1),
		Blocked:           blocked,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, ErrInvalidConfig)
	}
	return f, nil
}

type tableWindow struct{ *recent.Table }

func (w tableWindow) TestAndAdd(h uint64, now time.Time) bool {
	return w.Table.TestAndAdd(h, now.UnixNano())
}

func (w tableWindow) Stats() WindowStats {
	s := w.Table.Stats()
	return WindowStats{Structure: StructureTable, EstimatedFPP: s.FPP, MemoryBytes: s.MemoryBytes,
		Overwritten: s.Overwritten}
}

type fbfWindow struct{ *fbf.FBF }

func (w fbfWindow) Stats() WindowStats {
	s := w.FBF.Stats()
	return WindowStats{Structure: StructureFBF, EstimatedFPP: s.EstimatedFPP, MemoryBytes: s.MemoryBytes, FBF: s}
}
