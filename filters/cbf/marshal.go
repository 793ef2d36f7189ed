package cbf

import (
	"encoding/binary"
	"fmt"

	"github.com/zeebo/xxh3"
)

// Binary format (integers little endian):
//
//	offset size field
//	0      4    magic "FCBF"
//	4      1    version (1)
//	5      1    counter bits (4, 8, 16, 32)
//	6      1    hashes k
//	7      1    zero
//	8      8    cells m
//	16     8    seed
//	24     8    distinct
//	32     8    saturations
//	40     8*W  counter words, W = ceil(m / (64/c)); counter i is bits
//	            [(i%(64/c))*c, +c) of word i/(64/c); unused bits are zero
//	end-8  8    xxh3 64-bit hash of every preceding byte
const (
	magic      = "FCBF"
	version    = 1
	headerSize = 40
)

// MarshalBinary encodes f; it is AppendBinary(nil).
func (f *Filter) MarshalBinary() ([]byte, error) { return f.AppendBinary(nil) }

// AppendBinary appends f's encoding to b.
func (f *Filter) AppendBinary(b []byte) ([]byte, error) {
	start := len(b)
	b = append(b, magic...)
	b = append(b, version, byte(f.c), byte(f.opts.Hashes), 0)
	b = binary.LittleEndian.AppendUint64(b, f.opts.Cells)
	b = binary.LittleEndian.AppendUint64(b, f.opts.Seed)
	b = binary.LittleEndian.AppendUint64(b, f.distinct)
	b = binary.LittleEndian.AppendUint64(b, f.saturations)
	for _, w := range f.words {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	return binary.LittleEndian.AppendUint64(b, xxh3.Hash(b[start:])), nil
}

func corrupt(format string, a ...any) error {
	return fmt.Errorf("unmarshal counting bloom filter: %w: "+format, append([]any{ErrCorrupt}, a...)...)
}

// UnmarshalBinary replaces f with the filter in data; f is unchanged on
// error. Lengths are checked before anything is allocated.
func (f *Filter) UnmarshalBinary(data []byte) error {
	if len(data) < headerSize+8 {
		return corrupt("%d bytes is shorter than the header", len(data))
	}
	if string(data[:4]) != magic || data[4] != version || data[7] != 0 {
		return corrupt("bad magic or version")
	}
	body := data[:len(data)-8]
	if xxh3.Hash(body) != binary.LittleEndian.Uint64(data[len(data)-8:]) {
		return corrupt("checksum mismatch")
	}
	o := Options{CounterBits: int(data[5]), Hashes: int(data[6]),
		Cells: binary.LittleEndian.Uint64(data[8:]), Seed: binary.LittleEndian.Uint64(data[16:])}
	// Options fill zero fields with defaults; a marshalled filter always
	// states both, so zero is corruption (and 64/0 would panic below).
	if o.Hashes == 0 || o.CounterBits == 0 {
		return corrupt("zero hashes or counter bits")
	}
	if err := o.Validate(); err != nil {
		return corrupt("%v", err)
	}
	per := uint64(64 / o.CounterBits)
	words := (o.Cells + per - 1) / per
	if uint64(len(body)-headerSize) != 8*words {
		return corrupt("%d bytes of counters, want %d", len(body)-headerSize, 8*words)
	}
	g, err := New(o)
	if err != nil {
		return corrupt("%v", err)
	}
	g.distinct = binary.LittleEndian.Uint64(data[24:])
	g.saturations = binary.LittleEndian.Uint64(data[32:])
	for i := range g.words {
		g.words[i] = binary.LittleEndian.Uint64(body[headerSize+8*i:])
	}
	if r := o.Cells % per; r != 0 && g.words[len(g.words)-1]>>(r*uint64(g.c)) != 0 {
		return corrupt("nonzero padding")
	}
	*f = *g
	return nil
}
