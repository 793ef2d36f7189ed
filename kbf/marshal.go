package kbf

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
)

// Binary format, version 2 (all integers little-endian; version 1 placed
// the blocked layout's cells inside a line by offset and stride, so its
// blocked filters would read wrong and are refused; its standard ones are
// read):
//
//	offset  size  field
//	0       4     magic "kBF\x00"
//	4       1     version (2)
//	5       1     cell bits (16 or 32)
//	6       1     counter bits
//	7       1     encoder (0 greedy, 1 sidon)
//	8       1     layout (0 standard, 1 blocked)
//	9       1     k, cells per key
//	10      1     block lines option (0 = default)
//	11      1     zero
//	12      4     values
//	16      8     capacity
//	24      8     false-positive rate, IEEE 754 float64 bits
//	32      8     size factor, IEEE 754 float64 bits
//	40      8     seed
//	48      8     m, number of cells
//	56      8     stats: keys
//	64      8     stats: inserts
//	72      8     stats: deletes
//	80      8     stats: updates
//	88      8     stats: saturated cells
//	96      8     stats: rejected operations
//	104     m*w   cells, w = cell bits / 8 bytes each
//	104+m*w 4     CRC-32C (Castagnoli) of every preceding byte
//
// The options must validate and reproduce m and k; the codes are rebuilt
// from them (both encoders are deterministic).
const (
	headerSize    = 104
	formatVersion = 2
)

var (
	magic    = [4]byte{'k', 'B', 'F', 0}
	crcTable = crc32.MakeTable(crc32.Castagnoli)
)

// MarshalBinary encodes the filter; it is AppendBinary(nil).
func (f *Filter) MarshalBinary() ([]byte, error) { return f.AppendBinary(nil) }

// AppendBinary appends the encoded filter to b.
func (f *Filter) AppendBinary(b []byte) ([]byte, error) {
	start := len(b)
	o := f.opt
	b = append(b, magic[:]...)
	b = append(b, formatVersion, byte(o.CellBits), byte(o.CounterBits), byte(o.Encoder), byte(o.Layout), byte(f.k),
		byte(o.BlockLines), 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(o.Values))
	for _, x := range []uint64{uint64(o.Capacity), math.Float64bits(o.FPRate), math.Float64bits(o.SizeFactor), o.Seed,
		uint64(f.m), f.st.Keys, f.st.Inserts, f.st.Deletes, f.st.Updates, f.st.Saturated, f.st.Rejected} {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	if f.c16 != nil {
		for _, c := range f.c16 {
			b = binary.LittleEndian.AppendUint16(b, c)
		}
	} else {
		for _, c := range f.c32 {
			b = binary.LittleEndian.AppendUint32(b, c)
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], crcTable)), nil
}

// UnmarshalBinary decodes a filter written by MarshalBinary. Lengths are
// checked before anything is allocated; on error f is unchanged and the
// error wraps ErrFormat (or ErrInvalidOptions for bad options).
func (f *Filter) UnmarshalBinary(data []byte) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("decoding kbf: %w: "+format, append([]any{ErrFormat}, a...)...)
	}
	if len(data) < headerSize+4 {
		return bad("%d bytes, need at least %d", len(data), headerSize+4)
	}
	if [4]byte(data[:4]) != magic {
		return bad("magic %q", data[:4])
	}
	// Version 1 differs only in where the blocked layout puts a key's
	// cells inside a line, so its standard-layout filters read as they are.
	if v := data[4]; v != formatVersion && !(v == 1 && LayoutKind(data[8]) == Standard) {
		return bad("version %d, want %d (or 1 for the standard layout)", v, formatVersion)
	}
	if data[11] != 0 {
		return bad("nonzero padding")
	}
	u64 := func(off int) uint64 { return binary.LittleEndian.Uint64(data[off:]) }
	cellBits := int(data[5])
	if cellBits != 16 && cellBits != 32 {
		return bad("cell bits %d", cellBits)
	}
	m := u64(48)
	if m > MaxCells || uint64(len(data)) != headerSize+4+m*uint64(cellBits/8) {
		return bad("%d bytes for %d cells of %d bits", len(data), m, cellBits)
	}
	body := data[:len(data)-4]
	if got, want := crc32.Checksum(body, crcTable), binary.LittleEndian.Uint32(data[len(body):]); got != want {
		return bad("checksum %#x, want %#x", got, want)
	}
	capacity := u64(16)
	if capacity > math.MaxInt32 {
		return bad("capacity %d", capacity)
	}
	o := Options{
		Capacity: int(capacity), FPRate: math.Float64frombits(u64(24)),
		Values: int(binary.LittleEndian.Uint32(data[12:])), CellBits: cellBits, CounterBits: int(data[6]),
		Encoder: EncoderKind(data[7]), Layout: LayoutKind(data[8]),
		SizeFactor: math.Float64frombits(u64(32)), Seed: u64(40), BlockLines: int(data[10]),
	}
	if err := o.Validate(); err != nil {
		return fmt.Errorf("decoding kbf: %w", err)
	}
	sm, sk, err := o.shape()
	if err != nil {
		return fmt.Errorf("decoding kbf: %w", err)
	}
	if uint64(sm) != m || sk != int(data[9]) {
		return bad("stored m=%d k=%d, options give m=%d k=%d", m, data[9], sm, sk)
	}
	nf, err := New(o)
	if err != nil {
		return fmt.Errorf("decoding kbf: %w", err)
	}
	nf.st = Stats{Keys: u64(56), Inserts: u64(64), Deletes: u64(72), Updates: u64(80), Saturated: u64(88), Rejected: u64(96)}
	cells := data[headerSize:len(body)]
	for i := 0; i < nf.m; i++ {
		var w uint32
		if nf.c16 != nil {
			w = uint32(binary.LittleEndian.Uint16(cells[2*i:]))
		} else {
			w = binary.LittleEndian.Uint32(cells[4*i:])
		}
		if w&nf.ctrMask == 0 && w != 0 {
			return bad("cell %d has an empty counter and a nonzero code", i)
		}
		nf.setCell(i, w)
	}
	*f = *nf
	return nil
}
