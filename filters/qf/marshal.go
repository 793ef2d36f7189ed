package qf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

const (
	magic      = "FMQF"
	version    = 1
	headerSize = 16
	crcSize    = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// AppendBinary appends f's encoding (see the package doc) to b.
func (f *Filter) AppendBinary(b []byte) ([]byte, error) {
	start := len(b)
	body := f.words[:len(f.words)-1]
	if need := headerSize + 8*len(body) + crcSize; cap(b)-len(b) < need {
		nb := make([]byte, len(b), len(b)+need)
		copy(nb, b)
		b = nb
	}
	b = append(b, magic...)
	b = append(b, version, byte(f.q), byte(f.r), 0)
	b = binary.LittleEndian.AppendUint64(b, f.n)
	for _, w := range body {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli)), nil
}

// MarshalBinary returns f's encoding; it is AppendBinary(nil).
func (f *Filter) MarshalBinary() ([]byte, error) { return f.AppendBinary(nil) }

func corrupt(format string, a ...any) error {
	return fmt.Errorf("unmarshal quotient filter: "+format+": %w", append(a, ErrCorrupt)...)
}

// UnmarshalBinary sets f from an encoding made by MarshalBinary. It
// checks the length against the shape before allocating, the checksum,
// and that the slots are the layout of the fingerprints they decode to
// (decoded, laid out again and compared), so that a damaged table is
// refused rather than answered from. On error (wrapping ErrCorrupt) f is
// unchanged.
func (f *Filter) UnmarshalBinary(data []byte) error {
	if len(data) < headerSize+crcSize {
		return corrupt("length %d shorter than %d", len(data), headerSize+crcSize)
	}
	if string(data[:4]) != magic {
		return corrupt("bad magic %q", data[:4])
	}
	if data[4] != version {
		return corrupt("version %d, want %d", data[4], version)
	}
	q, r := uint(data[5]), uint(data[6])
	if data[7] != 0 {
		return corrupt("reserved byte %d", data[7])
	}
	if err := checkShape(q, r); err != nil {
		return corrupt("%v", err)
	}
	words := tableWords(q, r) - 1
	if want := headerSize + 8*words + crcSize; uint64(len(data)) != want {
		return corrupt("length %d, want %d for 2^%d slots of %d bits", len(data), want, q, r+metaBits)
	}
	body := data[:len(data)-crcSize]
	if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(data[len(body):]); got != want {
		return corrupt("checksum %08x, want %08x", got, want)
	}
	g := newShape(q, r)
	g.n = binary.LittleEndian.Uint64(data[8:])
	for i := range words {
		g.words[i] = binary.LittleEndian.Uint64(data[headerSize+8*i:])
	}
	if used := g.size * uint64(g.w); used%64 != 0 && g.words[used/64]>>(used%64) != 0 {
		return corrupt("bits set past the last slot")
	}
	if g.n >= g.size {
		return corrupt("%d fingerprints in %d slots (one must stay empty)", g.n, g.size)
	}
	if err := g.check(); err != nil {
		return corrupt("%v", err)
	}
	*f = *g
	return nil
}

// check decodes f's slots and lays the fingerprints out again: a table is
// valid when that gives back the same slots. Len (below 2^q) must be the
// number decoded.
func (f *Filter) check() error {
	c := f.Cursor()
	var seen uint64
	more := false
	next := func() (uint64, bool) {
		fp, ok := c.Next()
		if ok && seen == f.n {
			more, ok = true, false
		}
		if ok {
			seen++
		}
		return fp, ok
	}
	g, err := build(f.q, f.r, f.n, next)
	switch {
	case c.Err() != nil:
		return c.Err()
	case more || seen != f.n:
		return fmt.Errorf("the header says %d fingerprints, the slots hold more or fewer: %w", f.n, ErrCorrupt)
	case errors.Is(err, ErrOrder):
		return fmt.Errorf("remainders out of order: %w", ErrCorrupt)
	case err != nil:
		return err
	}
	for i := range f.words {
		if f.words[i] != g.words[i] {
			return fmt.Errorf("slots differ from the layout of their fingerprints (word %d): %w", i, ErrCorrupt)
		}
	}
	return nil
}
