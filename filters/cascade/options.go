package cascade

import (
	"errors"
	"fmt"
	"math"

	"github.com/flowmon/flowmon/filters/qf"
	"github.com/flowmon/flowmon/internal/snapshot"
)

// Sentinel errors. Every error this package returns wraps one of them
// (or, for a manifest Open cannot read, a *snapshot.Error as well).
var (
	// ErrInvalidOptions reports options that Validate rejects.
	ErrInvalidOptions = errors.New("cascade: invalid options")
	// ErrIncompatible reports a directory made with other options (another
	// fingerprint length or QF0 size).
	ErrIncompatible = errors.New("cascade: directory made with other options")
	// ErrCorrupt reports a damaged manifest or level: a checksum that does
	// not match, a file cut short, a header that disagrees with the
	// manifest.
	ErrCorrupt = errors.New("cascade: damaged")
	// ErrFull reports an insertion that needs a level past the last one
	// the fingerprint length allows.
	ErrFull = errors.New("cascade: full")
	// ErrLocked reports a directory another Filter (in this process or
	// another) has open.
	ErrLocked = errors.New("cascade: directory in use")
	// ErrClosed reports a call on a closed Filter.
	ErrClosed = errors.New("cascade: closed")
	// ErrNotSupported reports Options.Uncached where the platform has no
	// O_DIRECT.
	ErrNotSupported = errors.New("cascade: not supported on this platform")
	// ErrBusy reports an insertion TryInsert did not make because it
	// would have waited for a merge: QF0 is full while the QF0 frozen
	// before it is still being merged (or Sync, Seal or Close holds the
	// filter's manifest).
	ErrBusy = errors.New("cascade: busy merging")
)

// Defaults and limits.
const (
	// DefaultMaxLoad is QF0's load at which it is merged into the levels,
	// and so every level's load when written: 3/4, the paper's example
	// (Figure 2).
	DefaultMaxLoad = 0.75
	// MinRAMBytes is the smallest QF0 budget: 2^8 slots. Background
	// merges (the default) need twice that: RAMBytes holds two QF0s.
	MinRAMBytes = 1 << 10
	// PageSize is the unit a level is written, checksummed and read in.
	PageSize = 4096
)

// Options configures a Filter. RAMBytes and either FingerprintBits or
// Capacity with FPRate are required.
type Options struct {
	// RAMBytes is the budget of the QF0s: with background merges (the
	// default) two QF0s of half of it each, the one taking insertions and
	// the one frozen for a merge; with SyncMerge one QF0 of all of it. A
	// QF0 gets the most slots, 2^q0, whose remainders fit in its share,
	// and the levels' shapes follow from q0. The levels on disk add their
	// page checksums, 4 bytes per 4 KiB of level (Stats.RAMBytes counts
	// both).
	RAMBytes uint64
	// FingerprintBits is p, the length of the fingerprints stored. The
	// false-positive rate with n elements stored is 1 - e^(-n/2^p)
	// (Section 2: the Cascade Filter as a multiset of p-bit integers).
	FingerprintBits uint
	// Capacity and FPRate give p instead: the least with
	// 1 - e^(-Capacity/2^p) <= FPRate.
	Capacity uint64
	FPRate   float64
	// MaxLoad is QF0's load that triggers a merge, in (0, 1); 0 means
	// DefaultMaxLoad.
	MaxLoad float64
	// SyncMerge merges QF0 into the levels inside the insertion that finds
	// it full, as the paper does: that call, and every other call on the
	// Filter meanwhile, waits for the merge (seconds with a QF0 of
	// megabytes). Without it merges run in the background (package doc,
	// "Background merges"). The two modes split RAMBytes differently, so
	// a directory made in one is reopened in the other with twice (or
	// half) the RAMBytes, or refused (ErrIncompatible).
	SyncMerge bool
	// DropDamaged makes Open drop a damaged level instead of refusing the
	// directory: its file is renamed NAME.damaged, the manifest rewritten
	// without it, and Stats.Dropped says which. Its elements are lost
	// (lookups of them answer false). See the package doc.
	DropDamaged bool
	// QuickOpen makes Open check each level's header, size and checksum
	// table only, not every page's checksum; a damaged page is then found
	// when a lookup or a merge reads it.
	QuickOpen bool
	// Uncached keeps the levels out of the page cache, so that lookups
	// and merges measure the disk: lookups read with O_DIRECT and merges
	// drop what they write from the cache (posix_fadvise DONTNEED). For
	// benchmarks; Linux only (ErrNotSupported elsewhere).
	Uncached bool
}

// Validate checks the options and says which rule a value breaks.
func (o Options) Validate() error {
	if o.RAMBytes < MinRAMBytes*o.qf0s() {
		return fmt.Errorf("RAM budget of %d bytes must be at least %d (%d QF0s of at least %d bytes): %w",
			o.RAMBytes, MinRAMBytes*o.qf0s(), o.qf0s(), MinRAMBytes, ErrInvalidOptions)
	}
	if o.MaxLoad != 0 && !(o.MaxLoad > 0 && o.MaxLoad < 1) {
		return fmt.Errorf("max load %g must be in (0, 1): %w", o.MaxLoad, ErrInvalidOptions)
	}
	switch {
	case o.FingerprintBits != 0 && (o.Capacity != 0 || o.FPRate != 0):
		return fmt.Errorf("fingerprint bits %d and capacity %d with fp rate %g both set: give one: %w",
			o.FingerprintBits, o.Capacity, o.FPRate, ErrInvalidOptions)
	case o.FingerprintBits == 0 && o.Capacity == 0:
		return fmt.Errorf("fingerprint bits, or capacity with fp rate, must be set: %w", ErrInvalidOptions)
	case o.FingerprintBits == 0 && !(o.FPRate > 0 && o.FPRate < 1):
		return fmt.Errorf("fp rate %g must be in (0, 1): %w", o.FPRate, ErrInvalidOptions)
	}
	p := o.fingerprintBits()
	if p < minFingerprintBits || p > maxFingerprintBits {
		return fmt.Errorf("fingerprint bits %d must be in [%d, %d] (a tombstone bit goes below them): %w",
			p, minFingerprintBits, maxFingerprintBits, ErrInvalidOptions)
	}
	return nil
}

const (
	minFingerprintBits = 12
	maxFingerprintBits = 63
	minQ0              = 8
)

func (o Options) fingerprintBits() uint {
	if o.FingerprintBits != 0 {
		return o.FingerprintBits
	}
	// 1 - e^(-n/2^p) <= ε  ⇔  2^p >= n / -ln(1-ε).
	return uint(math.Ceil(math.Log2(float64(o.Capacity) / -math.Log1p(-o.FPRate))))
}

// qf0s is the number of QF0s RAMBytes holds: two with background merges.
func (o Options) qf0s() uint64 {
	if o.SyncMerge {
		return 1
	}
	return 2
}

func (o Options) maxLoad() float64 {
	if o.MaxLoad == 0 {
		return DefaultMaxLoad
	}
	return o.MaxLoad
}

// shape is what the options imply: every QF of the cascade stores v =
// p+1-bit values (the fingerprint and a tombstone bit below it); QF0 has
// 2^q0 slots, level i >= 1 has 2^(q0+i-1) (level 1 the size of QF0, each
// next level twice the last: the sum of the levels above it), so level i
// has v-q0-i+1 remainder bits, and the last level, maxLevel, has one.
type shape struct {
	p, v     uint // fingerprint and value bits
	q0       uint
	maxLevel int
	cap0     uint64 // QF0's fingerprints before a merge
	maxLoad  float64
}

func (o Options) shape() (shape, error) {
	if err := o.Validate(); err != nil {
		return shape{}, err
	}
	s := shape{p: o.fingerprintBits(), maxLoad: o.maxLoad()}
	s.v = s.p + 1
	// The most slots whose table fits a QF0's share of the budget,
	// keeping two remainder bits at least (one is the tombstone's).
	share := o.RAMBytes / o.qf0s()
	q := uint(minQ0)
	for q+1 <= s.v-2 && q+1 <= qf.MaxQuotientBits && qfBytes(q+1, s.v-q-1) <= share {
		q++
	}
	if qfBytes(q, s.v-q) > share {
		return shape{}, fmt.Errorf("RAM budget of %d bytes (%d QF0s) holds less than 2^%d slots of %d-bit fingerprints (%d bytes a QF0): %w",
			o.RAMBytes, o.qf0s(), minQ0, s.p, qfBytes(q, s.v-q), ErrInvalidOptions)
	}
	s.q0 = q
	s.maxLevel = int(s.v - q)
	s.cap0 = uint64(s.maxLoad * math.Ldexp(1, int(q)))
	return s, nil
}

// qfBytes is the memory of a QF of 2^q slots of r-bit remainders.
func qfBytes(q, r uint) uint64 { return qf.LinearWords(1<<q, r)*8 + 8 }

// levelShape is level i's quotient and remainder bits.
func (s shape) levelShape(i int) (q, r uint) {
	q = s.q0 + uint(i) - 1
	return q, s.v - q
}

// params is the manifest's description of the shape: a directory is only
// opened with options that give the same.
func (s shape) params() string {
	return snapshot.JoinParams(
		snapshot.P("format", "flowmon cascade filter"),
		snapshot.P("fingerprint_bits", s.p),
		snapshot.P("qf0_quotient_bits", s.q0),
		snapshot.P("max_load", s.maxLoad),
		snapshot.P("page_size", PageSize),
	)
}
