package qf

import (
	"errors"
	"fmt"
	"math"

	"github.com/flowmon/flowmon/internal/hashmix"
)

// Sentinel errors. Every error this package returns wraps one of them.
var (
	// ErrInvalidOptions reports options that Validate rejects.
	ErrInvalidOptions = errors.New("qf: invalid options")
	// ErrFull reports an insertion (or a merge, a resize) that would leave
	// no empty slot. The filter is unchanged.
	ErrFull = errors.New("qf: filter full")
	// ErrIncompatible reports filters of different fingerprint lengths
	// given to Merge.
	ErrIncompatible = errors.New("qf: incompatible filters")
	// ErrOrder reports fingerprints given to a Writer out of ascending
	// order, or longer than its q+r bits.
	ErrOrder = errors.New("qf: fingerprints out of order")
	// ErrCorrupt reports bytes that UnmarshalBinary cannot accept, or a
	// table that does not decode as a quotient filter.
	ErrCorrupt = errors.New("qf: corrupt encoding")
)

// Limits on the shape.
const (
	// MaxQuotientBits bounds q: 2^40 slots is terabytes, a bound that
	// catches nonsense sizes before they are allocated.
	MaxQuotientBits = 40
	// MaxRemainderBits keeps a slot (r+3 bits) within one 64-bit word.
	MaxRemainderBits = 61
	// MaxFingerprintBits is the width of the hash fingerprints come from.
	MaxFingerprintBits = 64
	// DefaultMaxLoad is the load Options sizes a filter for, and the
	// most Merge loads its result: the paper's example (Figure 2) fills
	// its filters to 3/4.
	DefaultMaxLoad = 0.75
)

// The three metadata bits at the bottom of each slot, in the paper's
// order; the remainder sits above them.
const (
	occupied     = 1 << 0 // is_occupied: this slot is some fingerprint's canonical slot
	continuation = 1 << 1 // is_continuation: the slot holds a run's second or later remainder
	shifted      = 1 << 2 // is_shifted: the slot holds a remainder not in its canonical slot
	metaBits     = 3
	metaMask     = occupied | continuation | shifted
)

// Options describes a filter: either the figures a user knows (Capacity
// and FPRate) or the shape (QuotientBits and RemainderBits); the shape
// wins when both are set.
type Options struct {
	// Capacity is the number of fingerprints the filter must hold at
	// DefaultMaxLoad: q = ceil(log2(Capacity / DefaultMaxLoad)).
	Capacity uint64
	// FPRate is the false-positive rate wanted at Capacity, in (0, 1):
	// r is the least with 1 - e^(-α/2^r) <= FPRate at α = DefaultMaxLoad.
	FPRate float64
	// QuotientBits (q, 2^q slots) and RemainderBits (r) set the shape
	// directly, both or neither: 1 <= q <= MaxQuotientBits,
	// 1 <= r <= MaxRemainderBits, q+r <= 64.
	QuotientBits, RemainderBits uint
}

// Validate checks the options and says which rule a value breaks.
func (o Options) Validate() error {
	switch {
	case (o.QuotientBits == 0) != (o.RemainderBits == 0):
		return fmt.Errorf("quotient bits %d and remainder bits %d must be set together: %w",
			o.QuotientBits, o.RemainderBits, ErrInvalidOptions)
	case o.QuotientBits != 0:
		return checkShape(o.QuotientBits, o.RemainderBits)
	case o.Capacity == 0:
		return fmt.Errorf("capacity must be > 0: %w", ErrInvalidOptions)
	case !(o.FPRate > 0 && o.FPRate < 1):
		return fmt.Errorf("fp rate %g must be in (0, 1): %w", o.FPRate, ErrInvalidOptions)
	}
	q, r := o.shape()
	return checkShape(q, r)
}

// Shape returns the q and r the options describe.
func (o Options) Shape() (q, r uint, err error) {
	if err := o.Validate(); err != nil {
		return 0, 0, err
	}
	q, r = o.shape()
	return q, r, nil
}

func (o Options) shape() (q, r uint) {
	if o.QuotientBits != 0 {
		return o.QuotientBits, o.RemainderBits
	}
	slots := math.Ceil(float64(o.Capacity) / DefaultMaxLoad)
	q = uint(max(1, math.Ceil(math.Log2(slots))))
	// 1 - e^(-α/2^r) <= ε  ⇔  2^r >= α / -ln(1-ε).
	r = uint(max(1, math.Ceil(math.Log2(DefaultMaxLoad/-math.Log1p(-o.FPRate)))))
	return q, r
}

func checkShape(q, r uint) error {
	switch {
	case q < 1 || q > MaxQuotientBits:
		return fmt.Errorf("quotient bits %d must be in [1, %d]: %w", q, MaxQuotientBits, ErrInvalidOptions)
	case r < 1 || r > MaxRemainderBits:
		return fmt.Errorf("remainder bits %d must be in [1, %d]: %w", r, MaxRemainderBits, ErrInvalidOptions)
	case q+r > MaxFingerprintBits:
		return fmt.Errorf("quotient bits %d + remainder bits %d must be at most %d: %w", q, r, MaxFingerprintBits, ErrInvalidOptions)
	}
	if words := tableWords(q, r); words > math.MaxInt || words > math.MaxInt64/8 {
		return fmt.Errorf("2^%d slots of %d bits do not fit in memory here: %w", q, r+metaBits, ErrInvalidOptions)
	}
	return nil
}

// tableWords is the number of 64-bit words 2^q slots of r+3 bits fill,
// plus one word of padding so that reading a slot can always read the
// word after it.
func tableWords(q, r uint) uint64 {
	return (uint64(1)<<q*uint64(r+metaBits)+63)/64 + 1
}

// Filter is a quotient filter over 64-bit hashes. See the package doc.
// The zero value is not usable; build one with New. Not safe for
// concurrent use; concurrent lookups with no writer are safe.
type Filter struct {
	q, r  uint
	w     uint   // slot width, r+3 bits
	size  uint64 // 2^q slots
	mask  uint64 // size-1
	rmask uint64 // 2^r-1
	smask uint64 // 2^w-1
	words []uint64
	n     uint64
}

// New returns an empty filter of the shape o describes.
func New(o Options) (*Filter, error) {
	q, r, err := o.Shape()
	if err != nil {
		return nil, err
	}
	return newShape(q, r), nil
}

func newShape(q, r uint) *Filter {
	f := &Filter{q: q, r: r, w: r + metaBits, size: 1 << q}
	f.mask = f.size - 1
	f.rmask = 1<<r - 1
	f.smask = 1<<f.w - 1
	f.words = make([]uint64, tableWords(q, r))
	return f
}

// Fingerprint is the p-bit fingerprint of the element with hash h: the
// top p bits of the SplitMix64 finalizer of h (internal/hashmix), so a
// caller's hash with uneven top bits still spreads evenly. 1 <= p <= 64.
func Fingerprint(h uint64, p uint) uint64 { return hashmix.Mix(h) >> (64 - p) }

// Fingerprint is the q+r-bit fingerprint f stores for hash h.
func (f *Filter) Fingerprint(h uint64) uint64 { return Fingerprint(h, f.q+f.r) }

// get returns slot i's value (its remainder above the three bits).
func (f *Filter) get(i uint64) uint64 {
	bit := i * uint64(f.w)
	k, off := bit>>6, bit&63
	return (f.words[k]>>off | f.words[k+1]<<(64-off)) & f.smask
}

// set stores v (at most w bits) in slot i. The second word is rewritten
// unchanged when the slot does not straddle it: both shifts are then 0.
func (f *Filter) set(i, v uint64) {
	bit := i * uint64(f.w)
	k, off := bit>>6, bit&63
	f.words[k] = f.words[k]&^(f.smask<<off) | v<<off
	f.words[k+1] = f.words[k+1]&^(f.smask>>(64-off)) | v>>(64-off)
}

func (f *Filter) incr(i uint64) uint64 { return (i + 1) & f.mask }
func (f *Filter) decr(i uint64) uint64 { return (i - 1) & f.mask }

// runStart returns the slot where quotient fq's run starts, or would
// start: walk back to the cluster's start, then forward one run per
// occupied slot until fq's turn (the paper's decoding of a cluster).
func (f *Filter) runStart(fq uint64) uint64 {
	b := fq
	for f.get(b)&shifted != 0 {
		b = f.decr(b)
	}
	s := b
	for b != fq {
		for {
			s = f.incr(s)
			if f.get(s)&continuation == 0 {
				break
			}
		}
		for {
			b = f.incr(b)
			if f.get(b)&occupied != 0 {
				break
			}
		}
	}
	return s
}

// Insert adds the element with hash h. The filter is a multiset of
// fingerprints: inserting an element twice stores it twice. It returns
// an error wrapping ErrFull, and changes nothing, when the insertion
// would fill the last empty slot.
func (f *Filter) Insert(h uint64) error { return f.InsertFingerprint(f.Fingerprint(h)) }

// InsertFingerprint adds a q+r-bit fingerprint (higher bits are ignored).
func (f *Filter) InsertFingerprint(fp uint64) error {
	if f.n+1 >= f.size {
		return fmt.Errorf("insert into a quotient filter of %d slots holding %d: %w", f.size, f.n, ErrFull)
	}
	fq, fr := fp>>f.r&f.mask, fp&f.rmask
	t := f.get(fq)
	entry := fr << metaBits
	if t&metaMask == 0 {
		f.set(fq, entry|occupied)
		f.n++
		return nil
	}
	wasOccupied := t&occupied != 0
	if !wasOccupied {
		f.set(fq, t|occupied)
	}
	start := f.runStart(fq)
	s := start
	if wasOccupied {
		// The run is sorted: go past every remainder <= fr.
		for f.get(s)>>metaBits <= fr {
			s = f.incr(s)
			if f.get(s)&continuation == 0 {
				break
			}
		}
		if s == start {
			// fr heads the run: the old head becomes its continuation.
			f.set(start, f.get(start)|continuation)
		} else {
			entry |= continuation
		}
	}
	if s != fq {
		entry |= shifted
	}
	f.insertAt(s, entry)
	f.n++
	return nil
}

// insertAt puts elt in slot s and shifts the following remainders one
// slot on, up to the first empty slot. Occupied bits belong to slots, not
// remainders: they stay where they are.
func (f *Filter) insertAt(s, elt uint64) {
	for {
		prev := f.get(s)
		empty := prev&metaMask == 0
		if !empty {
			prev |= shifted
			if prev&occupied != 0 {
				elt |= occupied
				prev &^= occupied
			}
		}
		f.set(s, elt)
		if empty {
			return
		}
		elt = prev
		s = f.incr(s)
	}
}

// Contains reports whether the element with hash h may be in the filter:
// false means certainly absent. It allocates nothing.
func (f *Filter) Contains(h uint64) bool { return f.ContainsFingerprint(f.Fingerprint(h)) }

// ContainsFingerprint reports whether the fingerprint is stored.
func (f *Filter) ContainsFingerprint(fp uint64) bool {
	_, _, ok := f.find(fp)
	return ok
}

// find walks fp's run (Section 2: the run of its quotient, remainders in
// order) to the first slot holding its remainder, and returns the
// quotient and that slot.
func (f *Filter) find(fp uint64) (fq, s uint64, ok bool) {
	fq, fr := fp>>f.r&f.mask, fp&f.rmask
	if f.get(fq)&occupied == 0 {
		return fq, 0, false
	}
	s = f.runStart(fq)
	for {
		rem := f.get(s) >> metaBits
		if rem >= fr {
			return fq, s, rem == fr
		}
		s = f.incr(s)
		if f.get(s)&continuation == 0 {
			return fq, 0, false
		}
	}
}

// Count is the number of copies of h's fingerprint stored: the times it
// (or another element with its fingerprint) was inserted and not deleted.
func (f *Filter) Count(h uint64) uint64 { return f.CountFingerprint(f.Fingerprint(h)) }

// CountFingerprint is the number of copies of the fingerprint stored.
func (f *Filter) CountFingerprint(fp uint64) uint64 {
	fq, fr := fp>>f.r&f.mask, fp&f.rmask
	if f.get(fq)&occupied == 0 {
		return 0
	}
	s := f.runStart(fq)
	var c uint64
	for {
		rem := f.get(s) >> metaBits
		if rem > fr {
			return c
		}
		if rem == fr {
			c++
		}
		s = f.incr(s)
		if f.get(s)&continuation == 0 {
			return c
		}
	}
}

// Delete removes one copy of h's fingerprint and reports whether there
// was one. Deleting an element that was never inserted removes another
// element's copy when their fingerprints collide (a false negative for
// it), as in any AMQ that deletes.
func (f *Filter) Delete(h uint64) bool { return f.DeleteFingerprint(f.Fingerprint(h)) }

// DeleteFingerprint removes one copy of the fingerprint, if stored.
func (f *Filter) DeleteFingerprint(fp uint64) bool {
	fq, s, ok := f.find(fp)
	if !ok {
		return false
	}
	f.deleteAt(s, fq)
	f.n--
	return true
}

// deleteAt removes the remainder in slot s, of quotient fq, and shifts
// the rest of the cluster back one slot, up to an empty slot or a
// remainder in its canonical slot (which cannot move back).
func (f *Filter) deleteAt(s, fq uint64) {
	head := f.get(s)&continuation == 0
	if head && f.get(f.incr(s))&continuation == 0 {
		// The run's only remainder: fq is no longer anyone's canonical slot.
		f.set(fq, f.get(fq)&^occupied)
	}
	quot, cur := fq, s
	for {
		nx := f.incr(cur)
		e := f.get(nx)
		if e&metaMask == 0 || e&shifted == 0 {
			break
		}
		moved := e &^ occupied
		if e&continuation == 0 {
			// The next run's head: its quotient is the next canonical
			// slot after quot.
			for {
				quot = f.incr(quot)
				if f.get(quot)&occupied != 0 {
					break
				}
			}
			if quot == cur {
				moved &^= shifted
			}
		} else if head && cur == s {
			// The deleted head's successor heads the run now.
			moved &^= continuation
			if cur == fq {
				moved &^= shifted
			}
		}
		f.set(cur, moved|f.get(cur)&occupied)
		cur = nx
	}
	f.set(cur, f.get(cur)&occupied)
}

// Reset empties the filter, keeping its shape and memory.
func (f *Filter) Reset() {
	clear(f.words)
	f.n = 0
}

// Len is the number of fingerprints stored (copies counted).
func (f *Filter) Len() uint64 { return f.n }

// Slots is 2^q.
func (f *Filter) Slots() uint64 { return f.size }

// QuotientBits is q.
func (f *Filter) QuotientBits() uint { return f.q }

// RemainderBits is r.
func (f *Filter) RemainderBits() uint { return f.r }

// FingerprintBits is p = q+r, the length of the fingerprints stored.
func (f *Filter) FingerprintBits() uint { return f.q + f.r }

// Load is α = n/2^q.
func (f *Filter) Load() float64 { return float64(f.n) / float64(f.size) }

// MemoryBytes is the memory held by the slots.
func (f *Filter) MemoryBytes() uint64 { return uint64(len(f.words)) * 8 }

// EstimatedFPRate is the paper's false-positive rate at f's load:
// 1 - e^(-α/2^r), the chance that one of n random p-bit fingerprints
// equals an absent element's.
func (f *Filter) EstimatedFPRate() float64 { return FPRate(f.Load(), f.r) }

// FPRate is the paper's false-positive rate of a quotient filter with r
// remainder bits at load α: 1 - e^(-α/2^r) (about α/2^r).
func FPRate(alpha float64, r uint) float64 { return -math.Expm1(-alpha / math.Ldexp(1, int(r))) }
