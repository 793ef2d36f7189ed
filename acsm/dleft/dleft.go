package dleft

import (
	"errors"
	"fmt"
	"github.com/flowmon/flowmon/internal/memhint"
	"math"
	"math/bits"
	"time"
	"unsafe"

	"github.com/flowmon/flowmon/acsm/backend"
	"github.com/flowmon/flowmon/internal/hashmix"
)

// Sentinel errors.
var (
	ErrOptions = errors.New("dleft: invalid options")
	// ErrFull and ErrNotFound are the backends' (acsm/backend).
	ErrFull     = backend.ErrFull
	ErrNotFound = backend.ErrNotFound
)

const (
	cellsPerBucket = 16 // 16 x 32 bits: one cache line
	subtables      = 2  // d
	tagBits        = 4
	tagMask        = 1<<tagBits - 1
	// ticksPerTimeout is a tier's timeout in ticks: a cell is expired when
	// its age in ticks exceeds it.
	ticksPerTimeout = 8
	// sweepTicks is how often (in ticks of the shortest tier) every bucket
	// is swept: an examined cell is at most 8 ticks old, so one is at most
	// 8+6+1 = 15 < 16 ticks old when next examined and its age never wraps.
	sweepTicks = 6
	// MaxTiers is the number of tiers a Table ages separately.
	MaxTiers = 3
)

type bucket [cellsPerBucket]uint32

// Options sizes a Table.
type Options struct {
	Capacity int // expected concurrent flows n
	// MemoryBytes, if > 0, is the table's size (rounded down to whole
	// pairs of 64-byte buckets) instead of Capacity/Load.
	MemoryBytes int
	Load        float64 // target load a (0 means 4/5)
	Values      int     // states are 0..Values-1 (at most 2^12-1)
	Seed        uint64
	// Tier gives each state's tier (0..MaxTiers-1); nil puts every state
	// in tier 0.
	Tier []uint8
	// Timeouts are the tiers' idle timeouts; a missing or zero one never
	// expires (no aging).
	Timeouts []time.Duration
	// Shed, beyond the paper: an insert that finds both buckets full of
	// live cells takes the cell of tier ShedTier (and "don't know" cells)
	// that has been idle longest, instead of being refused. Under a flood
	// of new flows (random-source SYNs) the half-open state goes first and
	// the flows that were established before stay. Off, an insert into
	// full buckets is refused (ErrFull), as in the paper.
	Shed     bool
	ShedTier uint8
}

// Validate checks the options.
func (o Options) Validate() error {
	var errs []error
	if o.Capacity < 1 && o.MemoryBytes <= 0 {
		errs = append(errs, fmt.Errorf("%w: capacity %d must be >= 1", ErrOptions, o.Capacity))
	}
	if o.Values < 1 || o.Values >= 1<<12 {
		errs = append(errs, fmt.Errorf("%w: values %d must be in [1, 4095]", ErrOptions, o.Values))
	}
	if o.Load < 0 || o.Load > 1 {
		errs = append(errs, fmt.Errorf("%w: load %g must be in (0, 1]", ErrOptions, o.Load))
	}
	if o.Tier != nil && len(o.Tier) != o.Values {
		errs = append(errs, fmt.Errorf("%w: %d tiers given for %d values", ErrOptions, len(o.Tier), o.Values))
	}
	for v, t := range o.Tier {
		if t >= MaxTiers {
			errs = append(errs, fmt.Errorf("%w: value %d: tier %d must be < %d", ErrOptions, v, t, MaxTiers))
			break
		}
	}
	if o.Shed && o.ShedTier >= MaxTiers {
		errs = append(errs, fmt.Errorf("%w: shed tier %d must be < %d", ErrOptions, o.ShedTier, MaxTiers))
	}
	if len(o.Timeouts) > MaxTiers {
		errs = append(errs, fmt.Errorf("%w: %d timeouts for at most %d tiers", ErrOptions, len(o.Timeouts), MaxTiers))
	}
	for t, d := range o.Timeouts {
		if d < 0 || (d > 0 && d < ticksPerTimeout) {
			errs = append(errs, fmt.Errorf("%w: tier %d timeout %v must be 0 or >= %d ns", ErrOptions, t, d, ticksPerTimeout))
		}
	}
	return errors.Join(errs...)
}

// Stats are the table's counters.
type Stats struct {
	backend.Stats
	Duplicates uint64 // inserts that found the flow's fingerprint taken and made it DK
	Swept      uint64 // buckets visited by the aging sweep
}

// Table is a d-left fingerprint table with per-cell aging.
type Table struct {
	buckets []bucket
	nb      uint64 // B, buckets per subtable
	fbits   uint
	fmask   uint32
	sbits   uint
	smask   uint32
	dk      uint32 // the "don't know" state
	seed    uint64
	live    int

	tier    []uint8             // per state, 1<<sbits entries (DK: tier 0)
	ages    [MaxTiers + 1]bool  // tier ages
	tickNs  [MaxTiers + 1]int64 // tick length per tier
	tickNow [MaxTiers + 1]uint32

	shed     bool  // Options.Shed
	shedTier uint8 // Options.ShedTier

	now, nextTick    int64 // packet time (ns); when a tier's tick next changes
	sweepNs, sweptAt int64 // period of a full sweep; time the sweep is due from
	cursor           int   // next bucket the sweep visits
	aging            bool
	stats            Stats
}

// New builds a Table.
func New(o Options) (*Table, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("new dleft table: %w", err)
	}
	if o.Load == 0 {
		o.Load = 0.8
	}
	nb := 0
	if o.MemoryBytes > 0 {
		nb = o.MemoryBytes / (subtables * int(unsafe.Sizeof(bucket{})))
	} else {
		nb = int(float64(o.Capacity) / o.Load / (subtables * cellsPerBucket)) // down: the load is at most a hair above a
	}
	nb = max(1, nb)
	sb := uint(bits.Len(uint(o.Values))) // all ones (>= Values) is DK
	fb := 32 - tagBits - sb
	t := &Table{
		buckets: make([]bucket, subtables*nb),
		nb:      uint64(nb),
		fbits:   fb, fmask: 1<<fb - 1,
		sbits: sb, smask: 1<<sb - 1, dk: 1<<sb - 1,
		seed: o.Seed,
		tier: make([]uint8, 1<<sb),
		shed: o.Shed, shedTier: o.ShedTier,
	}
	memhint.AdviseHugePages(unsafe.Pointer(&t.buckets[0]), len(t.buckets)*int(unsafe.Sizeof(bucket{})))
	copy(t.tier, o.Tier)
	var minTick int64 = math.MaxInt64
	for i, d := range o.Timeouts {
		if d > 0 {
			t.ages[i] = true
			t.tickNs[i] = int64(d) / ticksPerTimeout
			minTick = min(minTick, t.tickNs[i])
			t.aging = true
		}
	}
	if t.aging {
		t.sweepNs = sweepTicks * minTick
	}
	return t, nil
}

// FingerprintBits is f.
func (t *Table) FingerprintBits() int { return int(t.fbits) }

// Cells is the number of cells.
func (t *Table) Cells() int { return len(t.buckets) * cellsPerBucket }

// Len is the number of cells in use (expired ones not yet seen count).
func (t *Table) Len() int { return t.live }

// FPRate is the analytic chance that a flow never inserted matches a
// stored one when the table holds n flows: n / (B 2^f).
func (t *Table) FPRate(n int) float64 {
	return float64(n) / (float64(t.nb) * float64(uint64(1)<<t.fbits))
}

// locate returns h's bucket and fingerprint in both subtables (the
// permutations P_0, P_1 of the doc).
func (t *Table) locate(h uint64) (b0, b1 uint64, fp0, fp1 uint32) {
	x := hashmix.Mix(h ^ t.seed)
	b0 = hashmix.Reduce(x, t.nb)
	r := uint32(x) & t.fmask
	b1 = b0 + hashmix.Reduce((uint64(r)+1)*0xd6e8feb86659fd93, t.nb)
	if b1 >= t.nb {
		b1 -= t.nb
	}
	fp1 = (r ^ uint32(((b1+1)*0xa0761d6478bd642f)>>(64-t.fbits))) & t.fmask
	fp0 = r
	if fp0 == 0 {
		fp0 = 1
	}
	if fp1 == 0 {
		fp1 = 1
	}
	return b0, b1 + t.nb, fp0, fp1
}

func (t *Table) shift() uint { return t.sbits + tagBits }

// expired says whether occupied cell c is past its tier's timeout.
func (t *Table) expired(c uint32) bool {
	tr := t.tier[c&t.smask]
	if !t.ages[tr] {
		return false
	}
	return t.age(c, tr) > ticksPerTimeout
}

// age is occupied cell c's ticks since its last write, in tier tr's ticks.
func (t *Table) age(c uint32, tr uint8) uint32 { return (t.tickNow[tr] - c>>t.sbits) & tagMask }

// tagged is fingerprint fp with state v, tagged now.
func (t *Table) tagged(fp, v uint32) uint32 {
	return fp<<t.shift() | (t.tickNow[t.tier[v]]&tagMask)<<t.sbits | v
}

// Prefetch starts loading h's two buckets.
func (t *Table) Prefetch(h uint64) {
	b0, b1, _, _ := t.locate(h)
	memhint.Prefetch2(unsafe.Pointer(&t.buckets[b0]), unsafe.Pointer(&t.buckets[b1]))
}

// Find looks h up and returns its state, the answer and its cell (for Set
// and Clear; -1 when absent). A matching expired cell is emptied and
// answers Absent.
func (t *Table) Find(h uint64) (uint32, backend.Result, int) {
	b0, b1, fp0, fp1 := t.locate(h)
	sh := t.shift()
	slot := -1
	bk := &t.buckets[b0]
	for j, c := range bk {
		if c>>sh == fp0 {
			slot = int(b0)*cellsPerBucket + j
			break
		}
	}
	if slot < 0 {
		bk = &t.buckets[b1]
		for j, c := range bk {
			if c>>sh == fp1 {
				slot = int(b1)*cellsPerBucket + j
				break
			}
		}
		if slot < 0 {
			return 0, backend.Absent, -1
		}
	}
	c := t.cell(slot)
	if t.expired(c) {
		t.expire(slot)
		return 0, backend.Absent, -1
	}
	if v := c & t.smask; v != t.dk {
		return v, backend.Found, slot
	}
	t.stats.DontKnow++
	return 0, backend.Unknown, slot
}

func (t *Table) cell(slot int) uint32 {
	return t.buckets[slot/cellsPerBucket][slot%cellsPerBucket]
}

func (t *Table) setCell(slot int, c uint32) {
	t.buckets[slot/cellsPerBucket][slot%cellsPerBucket] = c
}

func (t *Table) expire(slot int) {
	t.setCell(slot, 0)
	t.live--
	t.stats.Expired++
}

// Set writes state v into the occupied cell slot (from Find), tagging it
// now: the flow's write-back.
func (t *Table) Set(slot int, v uint32) {
	fp := t.cell(slot) >> t.shift()
	t.setCell(slot, t.tagged(fp, v))
	t.stats.Updates++
}

// Clear empties the occupied cell slot (from Find).
func (t *Table) Clear(slot int) {
	t.setCell(slot, 0)
	t.live--
	t.stats.Deletes++
}

// scan empties b's expired cells and returns its live cells and its first
// free cell (-1: none) and the cell matching fp (-1: none).
func (t *Table) scan(b uint64, fp uint32) (load, free, match int) {
	r := t.scanShed(b, fp, false, 0, 0)
	return r.load, r.free, r.match
}

// bucketScan is what scanShed found in a bucket.
type bucketScan struct {
	load, free, match int // live cells, first free cell, cell matching fp (-1: none)
	// shed is the cell shedding would take (-1: none): the longest-idle
	// cell of the shed tier or a "don't know" one, ranked by shedRank.
	shed, rank int
}

// scanShed is scan, and, with rank (an Insert into a table that sheds),
// also looks for the cell to shed in the same pass, so that Insert into
// full buckets reads them once: base is the bucket's first cell among the
// two buckets' 32, start the cell shedRank's walk begins at.
func (t *Table) scanShed(b uint64, fp uint32, rank bool, base, start int) bucketScan {
	sh := t.shift()
	r := bucketScan{free: -1, match: -1, shed: -1, rank: -1}
	bk := &t.buckets[b]
	for j, c := range bk {
		if c == 0 {
			if r.free < 0 {
				r.free = j
			}
			continue
		}
		st := c & t.smask
		tr := t.tier[st]
		age := int(t.age(c, tr))
		if t.ages[tr] && age > ticksPerTimeout {
			bk[j] = 0
			t.live--
			t.stats.Expired++
			if r.free < 0 {
				r.free = j
			}
			continue
		}
		r.load++
		if c>>sh == fp {
			r.match = j
		}
		if rank && (tr == t.shedTier || st == t.dk) {
			if k := shedRank(age, base+j, start); k > r.rank {
				r.shed, r.rank = int(b)*cellsPerBucket+j, k
			}
		}
	}
	return r
}

// shedRank orders shedding candidates: the longest idle first, and among
// equal ages (ticks are an eighth of the timeout, so under a flood many
// cells tie) the first met walking the two buckets' 32 cells cyclically
// from cell start, which the new flow's fingerprint picks, so that a tie
// does not always fall on the same cell (a legitimate handshake's, say)
// but on one of them at random.
func shedRank(age, pos, start int) int {
	return age<<5 | (2*cellsPerBucket - 1 - (pos-start)&(2*cellsPerBucket-1))
}

// Insert adds h with state v. If one of h's buckets already holds h's
// fingerprint, that cell becomes "don't know" (the paper's rule for
// flows that cannot be told apart). When both buckets are full and the
// table sheds, the new flow takes the place of the longest-idle cell of
// the shed tier (or a "don't know" one) in them, if there is one.
func (t *Table) Insert(h uint64, v uint32) error {
	b0, b1, fp0, fp1 := t.locate(h)
	start := int(fp0) % (2 * cellsPerBucket)
	s0 := t.scanShed(b0, fp0, t.shed, 0, start)
	s1 := t.scanShed(b1, fp1, t.shed, cellsPerBucket, start)
	switch {
	case s0.match >= 0:
		t.setCell(int(b0)*cellsPerBucket+s0.match, t.tagged(fp0, t.dk))
		t.stats.Duplicates++
		return nil
	case s1.match >= 0:
		t.setCell(int(b1)*cellsPerBucket+s1.match, t.tagged(fp1, t.dk))
		t.stats.Duplicates++
		return nil
	}
	switch {
	case s0.free >= 0 && (s1.free < 0 || s0.load <= s1.load):
		t.buckets[b0][s0.free] = t.tagged(fp0, v)
	case s1.free >= 0:
		t.buckets[b1][s1.free] = t.tagged(fp1, v)
	case s0.rank >= 0 || s1.rank >= 0: // ranked only when the table sheds
		if s1.rank > s0.rank {
			t.setCell(s1.shed, t.tagged(fp1, v))
		} else {
			t.setCell(s0.shed, t.tagged(fp0, v))
		}
		t.stats.Shed++
		t.stats.Inserts++
		return nil
	default:
		t.stats.InsertFailures++
		return ErrFull
	}
	t.live++
	t.stats.Inserts++
	return nil
}

// Query looks h up (backend.Backend).
func (t *Table) Query(h uint64) (uint32, backend.Result) {
	v, r, _ := t.Find(h)
	return v, r
}

// Update changes h's state from old to nv (backend.Backend).
func (t *Table) Update(h uint64, old, nv uint32) error {
	v, r, slot := t.Find(h)
	if r != backend.Found || v != old {
		t.stats.DecodeFailures++
		return ErrNotFound
	}
	t.Set(slot, nv)
	return nil
}

// Delete removes h, stored with state v (backend.Backend).
func (t *Table) Delete(h uint64, v uint32) error {
	x, r, slot := t.Find(h)
	if r != backend.Found || x != v {
		t.stats.DecodeFailures++
		return ErrNotFound
	}
	t.Clear(slot)
	return nil
}

// Advance moves the table's clock to packet time now (ns; earlier times
// are ignored) and sweeps the buckets due. The clock starts at 0.
func (t *Table) Advance(now int64) {
	if now <= t.now {
		return
	}
	t.now = now
	if !t.aging {
		return
	}
	if el := now - t.sweptAt; el > t.sweepNs {
		t.jump(now)
		return
	}
	if now >= t.nextTick {
		t.setTicks(now)
	}
	n := len(t.buckets)
	k := int(float64(now-t.sweptAt) * float64(n) / float64(t.sweepNs))
	if k == 0 {
		return
	}
	t.sweptAt += int64(float64(k) * float64(t.sweepNs) / float64(n))
	for range k {
		t.scan(uint64(t.cursor), 0)
		t.cursor++
		if t.cursor == n {
			t.cursor = 0
		}
	}
	t.stats.Swept += uint64(k)
}

func (t *Table) setTicks(now int64) {
	next := int64(math.MaxInt64)
	for i := range MaxTiers {
		if t.ages[i] {
			k := now / t.tickNs[i]
			t.tickNow[i] = uint32(k)
			next = min(next, (k+1)*t.tickNs[i])
		}
	}
	t.nextTick = next
}

// jump moves the clock across a gap longer than a sweep period (a quiet
// link, a trace's end): the tags would wrap, so the whole table is swept
// at steps of a sweep period, or, past the longest timeout and its tick,
// every aging cell is expired in one pass.
func (t *Table) jump(now int64) {
	var longest int64
	for i := range MaxTiers {
		if t.ages[i] {
			longest = max(longest, (ticksPerTimeout+1)*t.tickNs[i])
		}
	}
	if t.live == 0 {
		t.setTicks(now)
		t.sweptAt = now
		return
	}
	if now-t.sweptAt > longest+t.sweepNs {
		for b := range t.buckets {
			bk := &t.buckets[b]
			for j, c := range bk {
				if c != 0 && t.ages[t.tier[c&t.smask]] {
					bk[j] = 0
					t.live--
					t.stats.Expired++
				}
			}
		}
		t.stats.Swept += uint64(len(t.buckets))
	} else {
		for x := t.sweptAt + t.sweepNs; x < now; x += t.sweepNs {
			t.sweepAll(x)
		}
	}
	t.sweepAll(now)
}

func (t *Table) sweepAll(now int64) {
	t.setTicks(now)
	for b := range t.buckets {
		t.scan(uint64(b), 0)
	}
	t.stats.Swept += uint64(len(t.buckets))
	t.sweptAt = now
}

// Reset empties the table, keeping its memory and clock.
func (t *Table) Reset() {
	clear(t.buckets)
	t.live = 0
}

// MemoryBytes is the table's size.
func (t *Table) MemoryBytes() int { return len(t.buckets) * int(unsafe.Sizeof(bucket{})) }

// Stats returns the backend counters (Expired included).
func (t *Table) Stats() backend.Stats { return t.stats.Stats }

// TableStats returns all the counters.
func (t *Table) TableStats() Stats { return t.stats }

var _ backend.Backend = (*Table)(nil)
