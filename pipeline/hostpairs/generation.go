package hostpairs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flowmon/flowmon/filters/cascade"
)

// generation is one Cascade Filter of the history: the pairs inserted
// from its start until the next generation's (package doc, "Horizon").
type generation struct {
	start  time.Time
	dir    string
	f      filter
	sealed chan struct{} // closed when its seal ends (or none is wanted)
}

// filter is what the history asks of a generation's *cascade.Filter (a
// test wraps one).
type filter interface {
	Contains(h uint64) (bool, error)
	TryInsert(h uint64) error
	Seal() error
	Stats() cascade.Stats
	Close() error
}

const (
	genPrefix  = "gen-"
	genLayout  = "20060102T150405.000000000Z"
	expiredExt = ".expired"
)

// genName is the subdirectory of the generation that starts at start.
func genName(start time.Time) string { return genPrefix + start.UTC().Format(genLayout) }

func (g *generation) name() string { return filepath.Base(g.dir) }

// openGen opens (or makes) the generation that starts at start.
func (h *History) openGen(start time.Time) (*generation, error) {
	dir := filepath.Join(h.dir, genName(start))
	f, err := cascade.Open(dir, h.opts.Options)
	if err != nil {
		return nil, err
	}
	return &generation{start: start, dir: dir, f: f, sealed: make(chan struct{})}, nil
}

// openGenerations opens the generations in the history's directory,
// oldest first, and deletes what removals a crash interrupted left.
func (h *History) openGenerations() ([]*generation, error) {
	ents, err := os.ReadDir(h.dir)
	if err != nil {
		return nil, err
	}
	var starts []time.Time
	for _, e := range ents {
		n := e.Name()
		switch {
		case !e.IsDir() || !strings.HasPrefix(n, genPrefix):
		case strings.HasSuffix(n, expiredExt):
			os.RemoveAll(filepath.Join(h.dir, n))
		default:
			t, err := time.Parse(genLayout, strings.TrimPrefix(n, genPrefix))
			if err != nil {
				return nil, fmt.Errorf("generation directory %s: not named by a start time (%s): %w", n, genPrefix+genLayout, err)
			}
			starts = append(starts, t)
		}
	}
	slices.SortFunc(starts, time.Time.Compare)
	var gens []*generation
	for _, t := range starts {
		g, err := h.openGen(t)
		if err != nil {
			for _, g := range gens {
				g.f.Close()
			}
			return nil, err
		}
		gens = append(gens, g)
	}
	return gens, nil
}

// advance moves the history's clock to now if it is later, and when that
// ends the newest generation or expires the oldest (or there is no
// generation yet), rotates under the exclusive lock.
func (h *History) advance(now time.Time) {
	for t := now.UnixNano(); ; {
		c := h.clock.Load()
		if t <= c || h.clock.CompareAndSwap(c, t) {
			break
		}
	}
	h.mu.RLock()
	due := h.due()
	h.mu.RUnlock()
	if !due {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.due() {
		if err := h.rotate(); err != nil {
			h.fail(err)
		}
	}
}

func (h *History) now() time.Time { return time.Unix(0, h.clock.Load()).UTC() }

// due reports whether the clock calls for a rotation. Called with mu held.
func (h *History) due() bool {
	if h.closed {
		return false
	}
	if len(h.gens) == 0 {
		return true
	}
	span := h.opts.span()
	if span == 0 {
		return false
	}
	now := h.now()
	return !now.Before(h.gens[len(h.gens)-1].start.Add(span)) || h.expired(h.gens[0], now)
}

// expired reports whether every pair of g is a horizon old at now: g
// ended (span after its start) a horizon before now. (A generation made
// under another horizon is judged by this one's span.)
func (h *History) expired(g *generation, now time.Time) bool {
	return h.opts.Horizon > 0 && !now.Before(g.start.Add(h.opts.span()+h.opts.Horizon))
}

// rotate starts a generation if the newest one ended (or there is none),
// sealing the one it ends, and removes the expired ones. Called with mu
// held exclusively; it creates a directory and takes its lock, and
// leaves merges and deletions to goroutines.
func (h *History) rotate() error {
	now := h.now()
	span := h.opts.span()
	if n := len(h.gens); n == 0 || span > 0 && !now.Before(h.gens[n-1].start.Add(span)) {
		start := now
		if span > 0 {
			start = now.Truncate(span)
		}
		g, err := h.openGen(start)
		if err != nil {
			return fmt.Errorf("flow history: start a generation: %w", err)
		}
		if n > 0 {
			h.seal(h.gens[n-1])
		}
		h.gens = append(h.gens, g)
	}
	h.expire(now)
	return nil
}

// seal merges g's QF0s into its levels and frees them, in the
// background.
func (h *History) seal(g *generation) {
	h.bg.Go(func() {
		defer close(g.sealed)
		if err := g.f.Seal(); err != nil {
			h.fail(fmt.Errorf("flow history generation %s: %w", g.name(), err))
		}
	})
}

// expire removes the generations, but the newest, whose pairs are all a
// horizon old at now: out of the list at once (lookups no longer read
// them), their directories in the background, after their seal.
// Called with mu held exclusively (or before the history is shared).
func (h *History) expire(now time.Time) {
	n := len(h.gens)
	keep := make([]*generation, 0, n)
	for i, g := range h.gens {
		if i == n-1 || !h.expired(g, now) {
			keep = append(keep, g)
			continue
		}
		h.bg.Go(func() {
			<-g.sealed
			err := g.f.Close()
			gone := g.dir + expiredExt
			if rerr := os.Rename(g.dir, gone); rerr != nil {
				err = rerr
			} else if rerr := os.RemoveAll(gone); rerr != nil {
				err = rerr
			}
			if err != nil {
				h.fail(fmt.Errorf("flow history: remove generation %s: %w", g.name(), err))
			}
		})
	}
	h.gens = keep
}

// GenerationStats describes a live generation.
type GenerationStats struct {
	Start  time.Time
	Filter cascade.Stats
}

// Stats are the history's counts since Open, and its filters'.
type Stats struct {
	Novel, Seen, Errors uint64
	// Unrecorded counts the pairs the newest generation could not take
	// because its filter was busy merging (cascade.ErrBusy): answered
	// novel (or seen, when found in an older generation) but not
	// recorded, they are novel again when next seen (or forgotten a
	// generation early).
	Unrecorded  uint64
	LastError   error
	Generations []GenerationStats // oldest first
	// RAMBytes and DiskBytes are the generations' filters', summed.
	RAMBytes, DiskBytes uint64
	Clock               time.Time // the latest packet time seen
}

// Stats reads the counts.
func (h *History) Stats() Stats {
	s := Stats{Novel: h.novel.Load(), Seen: h.seen.Load(), Errors: h.errs.Load(), Unrecorded: h.unrecorded.Load(), Clock: h.now()}
	if e := h.lastErr.Load(); e != nil {
		s.LastError = *e
	}
	h.mu.RLock()
	gens := slices.Clone(h.gens)
	h.mu.RUnlock()
	for _, g := range gens {
		fs := g.f.Stats()
		s.Generations = append(s.Generations, GenerationStats{Start: g.start, Filter: fs})
		s.RAMBytes += fs.RAMBytes
		s.DiskBytes += fs.DiskBytes
	}
	return s
}
