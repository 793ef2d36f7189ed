package kbf

import (
	"bytes"
	"fmt"

	"github.com/zeebo/xxh3"
)

// Dictionary converts arbitrary values (byte strings) to value numbers
// 0..n-1 and back, as Section III-D converts values to encodings: a
// secondary kBF (the s-kBF) maps a value's hash to its number, and the
// reverse table holds the values by number. A number is the index of the
// value's code in the code table, so the main filter's decoded code goes
// back to the value through the table (Section III-H: Filter decodes a
// greedy code to its index by the quadratic regression).
//
// The paper trusts the s-kBF's answer; a false positive would give a new
// value an existing value's code. Here a Found answer is checked against
// the reverse table, and an Unknown or mismatching answer falls back to a
// scan of the table, so the mapping is exact. Not safe for concurrent use.
type Dictionary struct {
	s      *Filter
	values [][]byte
}

// dictSeed keys the s-kBF's value hashes.
const dictSeed = 0x736b4246 // "skBF"

// NewDictionary builds a dictionary for up to values values; the s-kBF has
// false-positive rate fpRate and the given encoder.
func NewDictionary(values int, fpRate float64, enc EncoderKind) (*Dictionary, error) {
	s, err := New(Options{Capacity: values, FPRate: fpRate, Values: values, Encoder: enc})
	if err != nil {
		return nil, fmt.Errorf("building s-kBF: %w", err)
	}
	return &Dictionary{s: s, values: make([][]byte, 0, values)}, nil
}

// Len is the number of values assigned.
func (d *Dictionary) Len() int { return len(d.values) }

// MemoryBytes is the s-kBF's cells plus the stored values.
func (d *Dictionary) MemoryBytes() int {
	n := d.s.MemoryBytes()
	for _, v := range d.values {
		n += len(v)
	}
	return n
}

// Lookup returns the number of value, if assigned.
func (d *Dictionary) Lookup(value []byte) (uint32, bool) {
	v, r := d.s.Query(xxh3.HashSeed(value, dictSeed))
	switch {
	case r == Absent:
		return 0, false
	case r == Found && int(v) < len(d.values) && bytes.Equal(d.values[v], value):
		return v, true
	}
	for i, x := range d.values { // Unknown, or a false positive of the s-kBF
		if bytes.Equal(x, value) {
			return uint32(i), true
		}
	}
	return 0, false
}

// Number returns the number of value, assigning the next free one (and
// inserting it into the s-kBF) when the value is new.
func (d *Dictionary) Number(value []byte) (uint32, error) {
	if v, ok := d.Lookup(value); ok {
		return v, nil
	}
	if len(d.values) == cap(d.values) {
		return 0, fmt.Errorf("numbering value %q: %w: all %d numbers taken", value, ErrValueRange, cap(d.values))
	}
	v := uint32(len(d.values))
	if err := d.s.Insert(xxh3.HashSeed(value, dictSeed), v); err != nil {
		return 0, err
	}
	d.values = append(d.values, bytes.Clone(value))
	return v, nil
}

// Value returns the value numbered v (the reverse (encoding, value) table).
func (d *Dictionary) Value(v uint32) ([]byte, bool) {
	if int(v) >= len(d.values) {
		return nil, false
	}
	return d.values[v], true
}
