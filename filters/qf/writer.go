package qf

import (
	"errors"
	"fmt"
	"io"
)

// Writer lays out fingerprints given in ascending order as a quotient
// filter's slots, one slot after another: the sequential pass of the
// paper's merge. Each remainder goes to the first free slot at or after
// its canonical one, so the filter is written front to back and only the
// slots of the cluster being written are held.
//
// The table a Writer writes is linear: it does not wrap around. The last
// cluster may run past slot 2^q-1 into overflow slots, which the Writer
// writes after the 2^q (Close reports the total). A Cascade Filter keeps
// its levels on disk that way, so that a merge is one sequential write
// and a lookup never reads the file's start for its end; Merge and
// Resize fold the overflow back to the table's start.
//
// The slots are packed in 64-bit words as in a Filter (slot i at bits
// [i·w, i·w+w) of the stream, w = r+3) and handed to emit in order, a
// few hundred words at a time; the last word is padded with zeros.
type Writer struct {
	q, r, w  uint
	size     uint64
	rmask    uint64
	emit     func([]uint64) error
	buf      []uint64
	acc      uint64
	nacc     uint
	emitted  uint64   // slots packed
	pend     []uint64 // slots [emitted, emitted+len(pend)-ph) from pend[ph:]
	ph       int
	next     uint64 // first free slot
	last     uint64 // last fingerprint added
	n        uint64
	overflow []uint64
	err      error
}

const writerChunk = 512 // words handed to emit at a time (4 KiB)

// NewWriter returns a writer of a linear table of 2^q slots of r-bit
// remainders, handing packed words to emit.
func NewWriter(q, r uint, emit func(words []uint64) error) (*Writer, error) {
	if err := checkShape(q, r); err != nil {
		return nil, err
	}
	return &Writer{q: q, r: r, w: r + metaBits, size: 1 << q, rmask: 1<<r - 1, emit: emit,
		buf: make([]uint64, 0, writerChunk)}, nil
}

// Add places the next fingerprint: at least the last one (copies are
// kept), at most q+r bits, else an error wrapping ErrOrder.
func (w *Writer) Add(fp uint64) error {
	if w.err != nil {
		return w.err
	}
	if p := w.q + w.r; p < 64 && fp>>p != 0 {
		return fmt.Errorf("fingerprint %#x is longer than %d bits: %w", fp, p, ErrOrder)
	}
	if w.n > 0 && fp < w.last {
		return fmt.Errorf("fingerprint %#x after %#x: %w", fp, w.last, ErrOrder)
	}
	fq, fr := fp>>w.r, fp&w.rmask
	// Slots before fq and before the first free one are final: later
	// remainders go after the free one, later occupied bits at fq or
	// after.
	if err := w.flushTo(min(fq, w.next)); err != nil {
		return err
	}
	pos := max(fq, w.next)
	v := fr << metaBits
	if w.n > 0 && fq == w.last>>w.r {
		v |= continuation
	}
	if pos != fq {
		v |= shifted
	}
	w.mark(fq, occupied)
	w.mark(pos, v)
	if pos >= w.size {
		w.overflow = append(w.overflow, v)
	}
	w.next, w.last = pos+1, fp
	w.n++
	return nil
}

// mark ORs bits into pending slot i (i >= emitted).
func (w *Writer) mark(i, bits uint64) {
	k := w.ph + int(i-w.emitted)
	for len(w.pend) <= k {
		w.pend = append(w.pend, 0)
	}
	w.pend[k] |= bits
}

// flushTo packs the slots before bound.
func (w *Writer) flushTo(bound uint64) error {
	for w.emitted < bound {
		var v uint64
		if w.ph < len(w.pend) {
			v = w.pend[w.ph]
			w.ph++
		}
		if err := w.pack(v); err != nil {
			return err
		}
	}
	if w.ph == len(w.pend) {
		w.pend, w.ph = w.pend[:0], 0
	} else if w.ph > 64 && w.ph > len(w.pend)/2 {
		w.pend = w.pend[:copy(w.pend, w.pend[w.ph:])]
		w.ph = 0
	}
	return nil
}

func (w *Writer) pack(v uint64) error {
	w.acc |= v << w.nacc
	w.nacc += w.w
	w.emitted++
	if w.nacc < 64 {
		return nil
	}
	w.buf = append(w.buf, w.acc)
	w.nacc -= 64
	w.acc = v >> (w.w - w.nacc) // 0 when the slot ended the word
	if len(w.buf) == cap(w.buf) {
		return w.flushWords()
	}
	return nil
}

func (w *Writer) flushWords() error {
	if len(w.buf) == 0 {
		return nil
	}
	if err := w.emit(w.buf); err != nil {
		w.err = fmt.Errorf("write quotient filter slots: %w", err)
		return w.err
	}
	w.buf = w.buf[:0]
	return nil
}

// Len is the number of fingerprints added.
func (w *Writer) Len() uint64 { return w.n }

// Overflow returns the slot values (remainder and bits) written past slot
// 2^q-1, in order: the end of the last cluster.
func (w *Writer) Overflow() []uint64 { return w.overflow }

// Close packs the remaining slots, empty ones up to 2^q, and returns the
// number of slots written: 2^q plus the overflow.
func (w *Writer) Close() (slots uint64, err error) {
	if w.err != nil {
		return 0, w.err
	}
	if err := w.flushTo(max(w.size, w.next)); err != nil {
		return 0, err
	}
	if w.nacc > 0 {
		w.buf = append(w.buf, w.acc)
		w.acc, w.nacc = 0, 0
	}
	if err := w.flushWords(); err != nil {
		return 0, err
	}
	return w.emitted, nil
}

// LinearWords is the number of words a linear table of slots slots of
// r-bit remainders packs into.
func LinearWords(slots uint64, r uint) uint64 { return (slots*uint64(r+metaBits) + 63) / 64 }

// Reader decodes a linear table (see Writer) back into its fingerprints,
// in ascending order, reading its packed words front to back: a level's
// part in a Cascade Filter's merge. It checks the table as it goes (every
// run head has a canonical slot before it, only heads in their canonical
// slot are unshifted, remainders ascend) and stops with an error wrapping
// ErrCorrupt where it does not decode.
type Reader struct {
	q, r, w uint
	slots   uint64
	src     func() ([]uint64, error)
	words   []uint64
	acc     uint64
	nacc    uint
	i       uint64   // next slot
	occ     []uint64 // canonical slots whose runs have not started
	oh      int
	quot    uint64
	inRun   bool
	last    uint64
	n       uint64
	err     error
}

// NewReader returns a reader of a linear table of slots slots (2^q and the
// overflow) whose packed words src returns a chunk at a time (io.EOF, or
// an empty chunk, at the end).
func NewReader(q, r uint, slots uint64, src func() ([]uint64, error)) (*Reader, error) {
	if err := checkShape(q, r); err != nil {
		return nil, err
	}
	if slots < 1<<q {
		return nil, fmt.Errorf("linear table of %d slots is shorter than 2^%d: %w", slots, q, ErrCorrupt)
	}
	return &Reader{q: q, r: r, w: r + metaBits, slots: slots, src: src}, nil
}

// slot unpacks the next slot's value.
func (d *Reader) slot() (uint64, error) {
	smask := uint64(1)<<d.w - 1
	if d.nacc >= d.w {
		v := d.acc & smask
		d.acc >>= d.w
		d.nacc -= d.w
		return v, nil
	}
	if len(d.words) == 0 {
		ws, err := d.src()
		if len(ws) == 0 {
			if err == nil || errors.Is(err, io.EOF) {
				err = fmt.Errorf("slots end at %d of %d: %w", d.i, d.slots, ErrCorrupt)
			}
			return 0, err
		}
		d.words = ws
	}
	x := d.words[0]
	d.words = d.words[1:]
	v := d.acc | x<<d.nacc
	need := d.w - d.nacc
	d.acc, d.nacc = x>>need, 64-need
	return v & smask, nil
}

// Next returns the next fingerprint, or false at the end or on an error
// (Err).
func (d *Reader) Next() (uint64, bool) {
	for d.err == nil && d.i < d.slots {
		v, err := d.slot()
		if err != nil {
			d.err = err
			return 0, false
		}
		i := d.i
		d.i++
		if v&occupied != 0 {
			d.occ = append(d.occ, i)
		}
		if v&metaMask == 0 {
			if d.oh < len(d.occ) {
				return d.fail("slot %d is empty with the run of quotient %d still to come", i, d.occ[d.oh])
			}
			d.inRun = false
			continue
		}
		if v&continuation == 0 {
			if d.oh == len(d.occ) {
				return d.fail("run head in slot %d has no canonical slot before it", i)
			}
			d.quot = d.occ[d.oh]
			d.oh++
			if d.oh == len(d.occ) {
				d.occ, d.oh = d.occ[:0], 0
			}
			if (d.quot == i) != (v&shifted == 0) || (d.quot != i && !d.inRun) {
				return d.fail("run head of quotient %d in slot %d has the wrong shifted bit", d.quot, i)
			}
		} else if !d.inRun || v&shifted == 0 {
			return d.fail("continuation in slot %d follows no run", i)
		}
		d.inRun = true
		fp := d.quot<<d.r | v>>metaBits
		if d.n > 0 && fp < d.last {
			return d.fail("fingerprint %#x in slot %d after %#x", fp, i, d.last)
		}
		d.last = fp
		d.n++
		return fp, true
	}
	if d.err == nil && d.oh < len(d.occ) {
		d.fail("the run of quotient %d never starts", d.occ[d.oh])
	}
	return 0, false
}

func (d *Reader) fail(format string, a ...any) (uint64, bool) {
	d.err = fmt.Errorf("decode linear quotient filter: "+format+": %w", append(a, ErrCorrupt)...)
	return 0, false
}

// Err is the error that stopped the reader, or nil.
func (d *Reader) Err() error { return d.err }

// Len is the number of fingerprints read so far.
func (d *Reader) Len() uint64 { return d.n }

// SlotReader gives the slots of a linear table (a Writer's output) one at
// a time: a Cascade Filter's level, read from disk a page at a time. Slot
// returns 0 (an empty slot) for i past the table's last slot.
type SlotReader interface {
	Slot(i uint64) (uint64, error)
}

// LinearRun calls fn with the remainders of quotient fq's run in a linear
// table, in ascending order, until fn returns false. It makes the walk a
// Filter's lookup makes (back to the cluster's start, forward one run per
// occupied slot), reading only the slots it needs; a linear table's slot
// 0 is never shifted, so the walk back never wraps. A damaged table gives
// wrong answers, not endless walks: every loop ends at slot 0, at fq or at
// the table's end.
func LinearRun(t SlotReader, fq uint64, fn func(rem uint64) bool) error {
	v, err := t.Slot(fq)
	if err != nil || v&occupied == 0 {
		return err
	}
	b := fq
	for v&shifted != 0 && b > 0 {
		b--
		if v, err = t.Slot(b); err != nil {
			return err
		}
	}
	s := b
	for b < fq {
		for {
			s++
			if v, err = t.Slot(s); err != nil {
				return err
			}
			if v&continuation == 0 {
				break
			}
		}
		for b < fq {
			b++
			if v, err = t.Slot(b); err != nil {
				return err
			}
			if v&occupied != 0 {
				break
			}
		}
	}
	for {
		if v, err = t.Slot(s); err != nil || v&metaMask == 0 || !fn(v>>metaBits) {
			return err
		}
		s++
		if v, err = t.Slot(s); err != nil || v&continuation == 0 {
			return err
		}
	}
}
