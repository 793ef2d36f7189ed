// Package hostpairs is flowmon's long-term flow history: every (source,
// destination) host pair the pipeline sees, kept in Cascade Filters
// (filters/cascade) under a directory, so that flowmon remembers pairs
// over days within a fixed RAM budget and across restarts. It answers
// the pipeline's host-pair stage (pipeline.HostPairs), and through it the
// rules' novelty kind: was this pair seen within the horizon? Pairs are
// directed, originator to responder, as a flow record names them.
//
// # Answers
//
// The answer is a filter's: a pair never seen is called seen at the
// filters' false-positive rate (so a novelty alert is missed at that
// rate), a pair seen within the horizon is never called new. Lookups
// read each generation's QF0s in RAM, then a page of each level on disk
// (the page cache holds the busy ones). Novel holds a lock of its pair's
// stripe (one of 64, by the pair's key) from lookup to insertion, so that
// one new pair is novel once however many shards see it at once; pairs
// of other stripes are looked up alongside, each shard reading its own
// pages.
//
// # Merges
//
// The filters merge in the background (filters/cascade, "Background
// merges"): when the newest generation's QF0 fills it is frozen and
// merged on its own goroutine while a second QF0 takes insertions, so no
// shard waits for a merge. If that one fills too before the merge ends,
// Novel does not wait either: the pair is answered novel but not recorded
// (Stats.Unrecorded, flowmon_history_unrecorded_pairs_total), and will be
// novel again when next seen. Options.SyncMerge restores the paper's
// merge inside the insertion, which holds every shard's new flows for its
// length.
//
// # Horizon
//
// With Options.Horizon H > 0 a pair is remembered for at least H after
// it was last seen in a new flow, and at most H plus one generation. The
// history is k = Options.Generations generations of length g = H/k, each
// a Cascade Filter in a subdirectory named by its start (a multiple of g
// since the zero time: gen-20060102T150405.000000000Z). Lookups check
// every live generation, newest first; insertions go to the newest, and
// a pair found only in an older one is inserted into the newest again
// (so its last sighting, not its first, sets when it is forgotten). A
// generation ends g after its start, when a newer one begins, and is
// removed whole once its end is H old: all its pairs were inserted
// before its end. So up to k+1 generations are live, and a lookup of an
// absent pair reads a page of each level of each. Time is the packets'
// (Novel's now; the history's clock is the latest packet time it was
// given, and a packet older than the newest generation goes into it), so
// a replay of an old trace forgets as the live run did. H = 0 (the
// default) keeps every pair for ever, in one generation. The generations
// persist: Open finds them, and removes those whose end is H older than
// the newest one's start.
//
// # RAM
//
// Only the newest generation has QF0s: Options.RAMBytes (two QF0s of
// half of it, with background merges). When a generation ends it is
// sealed in the background (cascade.Filter.Seal: its QF0s are merged into
// its levels and freed), so until that merge ends, right after a
// rotation, the history holds up to twice RAMBytes. Every generation
// also keeps its levels' page checksums in RAM: 4 bytes per 4 KiB on
// disk (Stats.RAMBytes counts all of it).
//
// # Crashes
//
// A generation's filter keeps what its manifest holds (filters/cascade,
// "Crashes"): Close syncs every one, and a crash loses the pairs since
// the newest generation's last merge or Sync (they are novel again once).
// A generation is removed by renaming it to NAME.expired, then deleting
// it; Open deletes what a crash left of that.
package hostpairs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowmon/flowmon/filters/cascade"
	"github.com/flowmon/flowmon/internal/hashmix"
)

// Options configures a History.
type Options struct {
	// Options are each generation's Cascade Filter's: RAMBytes bounds the
	// newest generation's QF0s (see the package doc, "RAM"), Capacity and
	// FPRate size one generation's fingerprints.
	cascade.Options
	// Horizon is how long a pair is remembered after it was last seen:
	// at least Horizon, at most Horizon plus one generation. 0 is for
	// ever.
	Horizon time.Duration
	// Generations is how many generations a horizon spans, k: a
	// generation lasts Horizon/k, so a pair is kept at most Horizon/k
	// longer than Horizon, and lookups read k+1 filters. 0 means
	// DefaultGenerations.
	Generations int
}

// DefaultOptions: 16 MB of RAM, fingerprints sized for a billion pairs
// at a false-positive rate of 1e-3, background merges, no horizon.
var DefaultOptions = Options{Options: cascade.Options{RAMBytes: 16 << 20, Capacity: 1 << 30, FPRate: 1e-3}}

// Limits.
const (
	DefaultGenerations = 4
	MaxGenerations     = 64
	// MinGeneration is the shortest generation: Horizon/Generations must
	// be at least that.
	MinGeneration = time.Millisecond
)

// ErrInvalidOptions reports options that Validate rejects.
var ErrInvalidOptions = errors.New("flow history: invalid options")

// Validate checks the options and says which rule a value breaks.
func (o Options) Validate() error {
	if err := o.Options.Validate(); err != nil {
		return err
	}
	k := o.generations()
	switch {
	case o.Horizon < 0:
		return fmt.Errorf("horizon %v must be 0 (for ever) or more: %w", o.Horizon, ErrInvalidOptions)
	case k < 1 || k > MaxGenerations:
		return fmt.Errorf("generations %d must be in [1, %d]: %w", k, MaxGenerations, ErrInvalidOptions)
	case o.Horizon > 0 && o.Horizon/time.Duration(k) < MinGeneration:
		return fmt.Errorf("horizon %v over %d generations gives generations shorter than %v: %w", o.Horizon, k, MinGeneration, ErrInvalidOptions)
	}
	return nil
}

func (o Options) generations() int {
	if o.Generations == 0 {
		return DefaultGenerations
	}
	return o.Generations
}

// span is a generation's length, 0 without a horizon.
func (o Options) span() time.Duration {
	if o.Horizon == 0 {
		return 0
	}
	return o.Horizon / time.Duration(o.generations())
}

// History is a host-pair history in a directory; its methods may be
// called from many goroutines.
type History struct {
	dir  string
	opts Options

	// mu guards gens and closed: Novel holds it shared, a rotation
	// exclusively (for the length of creating a generation's directory).
	mu      sync.RWMutex
	gens    []*generation // live, oldest first; the last takes insertions
	closed  bool
	clock   atomic.Int64 // the latest packet time seen, Unix nanoseconds
	stripes [64]sync.Mutex
	bg      sync.WaitGroup // seals and removals

	novel, seen, errs, unrecorded atomic.Uint64
	lastErr                       atomic.Pointer[error]
}

// Open opens (or starts) the history in dir: the generations there, of
// which those past the horizon (as of the newest one's start) are
// removed, and the older ones sealed in the background.
func Open(dir string, o Options) (*History, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("flow history %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("flow history: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err == nil {
		return nil, fmt.Errorf("flow history %s: a Cascade Filter at the top of the directory, from a flowmon before generations: move it away to start a new history", dir)
	}
	h := &History{dir: dir, opts: o}
	gens, err := h.openGenerations()
	if err != nil {
		return nil, fmt.Errorf("flow history %s: %w", dir, err)
	}
	h.gens = gens
	if n := len(gens); n > 0 {
		newest := gens[n-1]
		h.clock.Store(newest.start.UnixNano())
		for _, g := range gens[:n-1] {
			h.seal(g)
		}
		h.expire(newest.start)
	}
	return h, nil
}

// Novel records that src and dst were seen together at now (the packet's
// time) and reports whether they had not been within the horizon. A
// failing disk read or write is counted (Stats) and answered "not novel",
// so a broken disk raises no flood of alerts.
func (h *History) Novel(src, dst netip.Addr, now time.Time) bool {
	k := pairKey(src, dst)
	h.advance(now)
	st := &h.stripes[k%uint64(len(h.stripes))]
	st.Lock()
	defer st.Unlock()
	h.mu.RLock()
	defer h.mu.RUnlock()
	if len(h.gens) == 0 { // closed, or the first generation could not be made
		h.fail(h.noGeneration())
		return false
	}
	newest := h.gens[len(h.gens)-1]
	for i := len(h.gens) - 1; i >= 0; i-- {
		known, err := h.gens[i].f.Contains(k)
		if err != nil {
			h.fail(err)
			return false
		}
		if known {
			h.seen.Add(1)
			if h.gens[i] != newest { // remembered from its last sighting on
				h.record(newest, k)
			}
			return false
		}
	}
	if !h.record(newest, k) {
		return false
	}
	h.novel.Add(1)
	return true
}

// record inserts k into g without waiting for a merge: when g is busy
// merging the pair is counted unrecorded. It reports false on an error.
func (h *History) record(g *generation, k uint64) bool {
	err := g.f.TryInsert(k)
	switch {
	case errors.Is(err, cascade.ErrBusy):
		h.unrecorded.Add(1)
	case err != nil:
		h.fail(err)
		return false
	}
	return true
}

func (h *History) fail(err error) {
	h.errs.Add(1)
	h.lastErr.Store(&err)
}

func (h *History) noGeneration() error {
	if h.closed {
		return fmt.Errorf("flow history %s: closed", h.dir)
	}
	return fmt.Errorf("flow history %s: no generation to record in", h.dir)
}

// pairKey is the pair's 64-bit key: the two addresses' 16-byte forms
// (IPv4 mapped) folded through the project's mixer.
func pairKey(src, dst netip.Addr) uint64 {
	a, b := src.Unmap().As16(), dst.Unmap().As16()
	var k uint64 = 0x686973746f727931 // "history1"
	for i := 0; i < 16; i += 8 {
		k = hashmix.Mix(k ^ binary.LittleEndian.Uint64(a[i:]))
		k = hashmix.Mix(k ^ binary.LittleEndian.Uint64(b[i:]))
	}
	return k
}

// Close waits for the seals and removals under way and closes every
// generation's filter, writing its QF0 with its manifest.
func (h *History) Close() error {
	h.mu.Lock()
	gens := h.gens
	h.gens, h.closed = nil, true
	h.mu.Unlock()
	h.bg.Wait()
	var err error
	for _, g := range gens {
		if cerr := g.f.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("flow history generation %s: %w", g.name(), cerr))
		}
	}
	return err
}
