// Package recent remembers the keys (64-bit hashes) seen within a moving
// window of time, in a table of fixed size: the duplicate detector of a
// packet stream, beside the Forgetful Bloom Filter (filters/fbf) it
// replaces on flowmon's packet path.
//
// # Structure
//
// The table is an array of buckets of one cache line each: 15 cells of 32
// bits and a cursor. A key's one mix picks its bucket (the high bits) and
// its fingerprint (25 low bits, never 0); a cell holds a fingerprint and
// the tick of packet time it was written in (7 bits; a tick is a quarter
// of the window). TestAndAdd compares the key's fingerprint with the
// bucket's 15 cells; if no cell written within the window holds it, the
// key goes into the cell at the cursor, which moves on: each bucket is a
// ring of the last 15 keys that fell in it, the oldest overwritten first,
// with no search for a victim. An FBF with the same error tests three
// Bloom filters and sets sixteen bits in two of them, three cache lines
// and the positions of sixteen bits; this reads one line and compares.
//
// # What it answers
//
// A key inserted at time t is found until t + W at least and t + 1.25·W at
// most (its cell's tick within four ticks of now), unless fifteen later
// keys landed in its bucket before: then it is forgotten early, and a
// duplicate of it is taken for a new key. New sizes the table for
// Options.Expected keys a window at four keys a bucket over the 1.25·W a
// key may be held: the keys a bucket receives are then Poisson with mean
// at most 4, and a key is forgotten before W with probability at most
// P(Poisson(4) >= 15) = 1.2e-5 (EarlyForgetRate; Stats.Overwritten counts
// the cells actually overwritten while live). Where an FBF overloaded by a
// burst drops more unique keys as duplicates, this table keeps every
// unique key and forgets the oldest sooner.
//
// A key never inserted (or inserted longer ago than the window) is taken
// for a duplicate when a live cell of its bucket holds its fingerprint:
// with probability at most (live cells)/(2^25-1) <= 4.5e-7 a lookup
// (FalsePositiveBound; Stats.FPP is the measured load's).
//
// # Ageing
//
// A cell's tick is 7 bits, so its age would wrap after 128 ticks: a sweep
// empties the expired cells of every bucket at least every 120 ticks (30
// windows), a few buckets at each step of the clock, so that no cell is
// ever more than 125 ticks old when it is compared; a clock that jumps by
// more than a sweep (a quiet link, a gap in a trace) empties the whole
// table at once.
// Time is the caller's packet time; a time before the clock counts as
// the clock.
//
// A Table is owned by one goroutine; Stats may be read from any after
// Publish.
package recent

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/flowmon/flowmon/internal/hashmix"
	"github.com/flowmon/flowmon/internal/memhint"
	"github.com/flowmon/flowmon/internal/period"
)

const (
	// CellsPerBucket is the cells of a bucket; its 16th word is the cursor.
	CellsPerBucket = 15
	tagBits        = 7
	tagMask        = 1<<tagBits - 1
	// FingerprintBits is the bits of a key's fingerprint in a cell.
	FingerprintBits = 32 - tagBits
	fpMask          = 1<<FingerprintBits - 1
	// ticksPerWindow: a key is held while its cell's tick is at most this
	// many ticks behind now, for [W, W + W/ticksPerWindow).
	ticksPerWindow = 4
	// sweepTicks is how often every bucket is swept: a cell is at most
	// sweepTicks + ticksPerWindow + 1 = 125 < 128 ticks old when
	// compared. The sweep reads every line of the table each period, a
	// cache miss each, so it runs as seldom as the 7-bit tick allows: a
	// sweep every 32 ticks (with 6-bit ticks) is a visible share of a
	// replay's time (docs/results/pipeline.md, "What each stage costs the
	// whole, and the dedup window").
	sweepTicks = 120
	// LoadPerBucket is the keys a bucket receives, at the expected rate,
	// over the longest time a key is held (New sizes for it).
	LoadPerBucket = 4.0
)

// ErrOptions is wrapped by New's errors.
var ErrOptions = errors.New("recent: invalid options")

// Options sizes a Table.
type Options struct {
	Window   time.Duration // how long a key is held at least; at least 4 ns
	Expected uint64        // keys a window at the rate the table is sized for
	Seed     uint64
}

type bucket [CellsPerBucket + 1]uint32

// Table is the window of recent keys.
type Table struct {
	buckets []bucket
	nb      uint64
	seed    uint64
	tickNs  int64 // a quarter of the window

	// The clock: the latest packet time (ns), its tick (whose low bits
	// are the tag cells hold now) and when that tick ends; the sweep's
	// next bucket, the time it is due from, and the time one bucket's
	// share of a sweep takes.
	started bool
	now     int64
	tickNo  int64
	tickEnd int64
	cursor  uint64
	sweptAt int64
	stepNs  int64
	// perTick counts the keys inserted in each of the last ticks, by tag:
	// those of the last ticksPerWindow+1 are the keys held, which the
	// false-positive estimate needs (live cells also count the expired
	// ones the sweep has not reached).
	perTick [1 << tagBits]uint32

	live                  uint64 // cells in use (expired ones not yet swept count)
	inserted, overwritten uint64
	pub                   struct{ live, held, inserted, overwritten atomic.Uint64 }
}

// New builds a Table for o.
func New(o Options) (*Table, error) {
	if o.Window < ticksPerWindow {
		return nil, fmt.Errorf("new recent table: window %v must be at least %d ns: %w", o.Window, ticksPerWindow, ErrOptions)
	}
	held := float64(o.Expected) * (1 + 1.0/ticksPerWindow)
	nb := max(1, uint64(math.Ceil(held/LoadPerBucket)))
	if nb > 1<<31 {
		return nil, fmt.Errorf("new recent table: %d keys a window need more than 2^31 buckets: %w", o.Expected, ErrOptions)
	}
	t := &Table{buckets: make([]bucket, nb), nb: nb, seed: o.Seed, tickNs: int64(o.Window) / ticksPerWindow}
	t.stepNs = max(1, sweepTicks*t.tickNs/int64(nb))
	memhint.AdviseHugePages(unsafe.Pointer(&t.buckets[0]), len(t.buckets)*int(unsafe.Sizeof(bucket{})))
	return t, nil
}

// locate returns h's bucket and fingerprint: the bucket from the mix's
// high bits (Reduce), the fingerprint from its low ones, so the two are
// independent.
func (t *Table) locate(h uint64) (uint64, uint32) {
	x := hashmix.Mix(h ^ t.seed)
	f := uint32(x) & fpMask
	if f == 0 {
		f = 1
	}
	return hashmix.Reduce(x, t.nb), f
}

// Prefetch starts loading h's bucket.
func (t *Table) Prefetch(h uint64) {
	i, _ := t.locate(h)
	b := unsafe.Pointer(&t.buckets[i])
	memhint.Prefetch2(b, b)
}

// held says whether cell c, in use, was written within the window.
func (t *Table) held(c uint32) bool { return (t.tag()-c)&tagMask <= ticksPerWindow }

// tag is the tick now as cells hold it.
func (t *Table) tag() uint32 { return uint32(t.tickNo) & tagMask }

// setTick makes tick k the clock's.
func (t *Table) setTick(k int64) { t.tickNo, t.tickEnd = k, (k+1)*t.tickNs }

// find says whether bucket b holds fingerprint f in a live cell.
func (t *Table) find(b *bucket, f uint32) bool {
	for _, c := range b[:CellsPerBucket] {
		if c>>tagBits == f && t.held(c) {
			return true
		}
	}
	return false
}

// Test says whether h was inserted within the window at now (ns).
func (t *Table) Test(h uint64, now int64) bool {
	t.Advance(now)
	i, f := t.locate(h)
	return t.find(&t.buckets[i], f)
}

// TestAndAdd says whether h was inserted within the window at now (ns),
// and inserts it at now if it was not. It allocates nothing.
func (t *Table) TestAndAdd(h uint64, now int64) bool {
	t.Advance(now)
	bi, f := t.locate(h)
	b := &t.buckets[bi]
	if t.find(b, f) {
		return true
	}
	i := b[CellsPerBucket]
	if i >= CellsPerBucket { // not from New or RestoreState; keeps the index in range
		i = 0
	}
	switch old := b[i]; {
	case old == 0:
		t.live++
	case t.held(old):
		t.overwritten++
	}
	b[i] = f<<tagBits | t.tag()
	t.perTick[t.tag()]++
	if i++; i == CellsPerBucket {
		i = 0
	}
	b[CellsPerBucket] = i
	if t.inserted++; t.inserted&1023 == 0 {
		t.Publish()
	}
	return false
}

// Advance moves the clock to now (ns; earlier times are ignored) and
// sweeps the buckets due.
func (t *Table) Advance(now int64) {
	if !t.started {
		t.started, t.sweptAt = true, now
		t.setTick(period.Of(now, t.tickNs))
	} else if now <= t.now {
		return
	}
	t.now = now
	if now >= t.tickEnd {
		// A division a tick, not a packet; the ticks passed count anew.
		k := period.Of(now, t.tickNs)
		for j := t.tickNo + 1; j <= min(k, t.tickNo+1<<tagBits); j++ {
			t.perTick[j&tagMask] = 0
		}
		t.setTick(k)
	}
	el := now - t.sweptAt
	if el < t.stepNs {
		return
	}
	if el >= sweepTicks*t.tickNs {
		// No packet for a whole sweep (the sweep keeps sweptAt within a
		// step of every packet): every cell is past the window, and its
		// tick may have wrapped to look recent, so all are emptied.
		t.forgetAll()
		t.sweptAt = now
		return
	}
	k := min(uint64(el/t.stepNs), t.nb)
	t.sweptAt += int64(k) * t.stepNs
	t.sweep(k)
}

// sweep empties the expired cells of the next n buckets.
func (t *Table) sweep(n uint64) {
	for range n {
		b := &t.buckets[t.cursor]
		for j, c := range b[:CellsPerBucket] {
			if c != 0 && !t.held(c) {
				b[j] = 0
				t.live--
			}
		}
		if t.cursor++; t.cursor == t.nb {
			t.cursor = 0
		}
	}
}

// forgetAll empties every cell; the buckets' cursors stay.
func (t *Table) forgetAll() {
	for i := range t.buckets {
		t.buckets[i] = bucket{CellsPerBucket: t.buckets[i][CellsPerBucket]}
	}
	t.live = 0
}

// Buckets is the number of buckets.
func (t *Table) Buckets() int { return len(t.buckets) }

// MemoryBytes is the table's size.
func (t *Table) MemoryBytes() uint64 { return uint64(len(t.buckets)) * uint64(unsafe.Sizeof(bucket{})) }

// FalsePositiveBound is the most a lookup of a key not held can be taken
// for one held: every cell of its bucket live, each matching its
// fingerprint with probability 1/(2^25-1).
func FalsePositiveBound() float64 { return CellsPerBucket / float64(fpMask) }

// EarlyForgetRate is the chance that a key is forgotten before its window
// ends when its bucket receives Poisson(load) other keys while it is held:
// P(Poisson(load) >= 15). New sizes for load = LoadPerBucket.
func EarlyForgetRate(load float64) float64 {
	// 1 - P(X <= 14), summed from the top for precision in the tail.
	term := math.Exp(-load)
	cdf := term
	for i := 1; i < CellsPerBucket; i++ {
		term *= load / float64(i)
		cdf += term
	}
	return max(0, 1-cdf)
}

// Stats is a snapshot for metrics.
type Stats struct {
	Buckets     int
	Live        uint64  // cells in use (expired ones the sweep has not emptied count)
	Held        uint64  // cells held: keys inserted within the last 1.25 windows at most
	Inserted    uint64  // keys inserted (found absent)
	Overwritten uint64  // cells overwritten while held: keys forgotten before their window ended
	FPP         float64 // estimated false-positive probability a lookup at the published load
	MemoryBytes uint64
}

// EstimatedFPP is the expected false-positive probability of a lookup at
// the table's load now: the cells held a bucket (the keys inserted within
// the last five ticks), each matching a fingerprint with probability
// 1/(2^25-1). Owner goroutine only.
func (t *Table) EstimatedFPP() float64 { return t.fpp(t.heldCells()) }

// fpp is the false-positive probability of a lookup with held cells held.
func (t *Table) fpp(held uint64) float64 { return float64(held) / float64(t.nb) / float64(fpMask) }

// heldCells estimates the cells held: the keys inserted within the last
// ticksPerWindow+1 ticks, at most the cells in use.
func (t *Table) heldCells() uint64 {
	var n uint64
	for a := range uint32(ticksPerWindow + 1) {
		n += uint64(t.perTick[(t.tag()-a)&tagMask])
	}
	return min(n, t.live)
}

// Publish makes the current counts visible to Stats; TestAndAdd calls it
// every 1024 insertions.
func (t *Table) Publish() {
	t.pub.live.Store(t.live)
	t.pub.held.Store(t.heldCells())
	t.pub.inserted.Store(t.inserted)
	t.pub.overwritten.Store(t.overwritten)
}

// Stats returns the last published snapshot. Safe for concurrent use.
func (t *Table) Stats() Stats {
	held := t.pub.held.Load()
	return Stats{
		Buckets:     len(t.buckets),
		Live:        t.pub.live.Load(),
		Held:        held,
		Inserted:    t.pub.inserted.Load(),
		Overwritten: t.pub.overwritten.Load(),
		FPP:         t.fpp(held),
		MemoryBytes: t.MemoryBytes(),
	}
}
