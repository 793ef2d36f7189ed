package bloom

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

const (
	magic      = "FMBL"
	version    = 1
	headerSize = 24
	crcSize    = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// AppendBinary appends f's encoding (see the package doc) to b.
func (f *Filter) AppendBinary(b []byte) ([]byte, error) {
	start := len(b)
	b = append(b, magic...)
	layout := byte(0)
	if f.blocked {
		layout = 1
	}
	b = append(b, version, layout, byte(f.k), 0)
	b = binary.LittleEndian.AppendUint64(b, f.m)
	b = binary.LittleEndian.AppendUint64(b, f.count)
	for _, w := range f.words {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli)), nil
}

// MarshalBinary returns f's encoding.
func (f *Filter) MarshalBinary() ([]byte, error) { return f.AppendBinary(nil) }

// UnmarshalBinary sets f from an encoding made by MarshalBinary. On error
// (wrapping ErrFormat) f is unchanged.
func (f *Filter) UnmarshalBinary(b []byte) error {
	if len(b) < headerSize+crcSize {
		return fmt.Errorf("unmarshal bloom filter: length %d shorter than %d: %w", len(b), headerSize+crcSize, ErrFormat)
	}
	if string(b[:4]) != magic {
		return fmt.Errorf("unmarshal bloom filter: bad magic %q: %w", b[:4], ErrFormat)
	}
	if b[4] != version {
		return fmt.Errorf("unmarshal bloom filter: version %d, want %d: %w", b[4], version, ErrFormat)
	}
	if b[5] > 1 {
		return fmt.Errorf("unmarshal bloom filter: layout %d: %w", b[5], ErrFormat)
	}
	blocked := b[5] == 1
	k := int(b[6])
	if k < 1 || k > MaxHashes {
		return fmt.Errorf("unmarshal bloom filter: %d hashes not in [1, %d]: %w", k, MaxHashes, ErrFormat)
	}
	if b[7] != 0 {
		return fmt.Errorf("unmarshal bloom filter: reserved byte %d: %w", b[7], ErrFormat)
	}
	m := binary.LittleEndian.Uint64(b[8:])
	if m == 0 || m > MaxBits || (blocked && m%BlockBits != 0) {
		return fmt.Errorf("unmarshal bloom filter: %d bits (blocked %t): %w", m, blocked, ErrFormat)
	}
	words := (m + 63) / 64
	if uint64(len(b)) != headerSize+8*words+crcSize {
		return fmt.Errorf("unmarshal bloom filter: length %d, want %d for %d bits: %w",
			len(b), headerSize+8*words+crcSize, m, ErrFormat)
	}
	body := b[:len(b)-crcSize]
	if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(b[len(body):]); got != want {
		return fmt.Errorf("unmarshal bloom filter: checksum %08x, want %08x: %w", got, want, ErrFormat)
	}
	if m%64 != 0 {
		// Bits past m in the last word are never set by Add.
		if last := binary.LittleEndian.Uint64(body[len(body)-8:]); last>>(m%64) != 0 {
			return fmt.Errorf("unmarshal bloom filter: bits set past m: %w", ErrFormat)
		}
	}
	nf := newShape(m, k, blocked)
	nf.count = binary.LittleEndian.Uint64(b[16:])
	for i := range nf.words {
		nf.words[i] = binary.LittleEndian.Uint64(b[headerSize+8*i:])
	}
	*f = *nf
	return nil
}
