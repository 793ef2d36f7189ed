package ccf

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/zeebo/xxh3"
)

// Binary format (all integers little endian):
//
//	offset size  field
//	0      4     magic "FCCF"
//	4      1     version (1)
//	5      1     f, fingerprint bits
//	6      1     c, counter bits
//	7      1     b, slots per bucket
//	8      1     stash size
//	9      1     max levels
//	10     1     L, levels in use (1..max levels)
//	11     1     zero
//	12     4     max kicks
//	16     8     seed
//	24     8     m0, level-0 buckets (level l has m0<<l)
//	32     8     saturations
//	40           L level records, each:
//	       8       occupied slots
//	       1       s, stashed entries (<= stash size)
//	       24*s    stash entries: bucket, fingerprint, count (8 bytes each)
//	       8*W     packed slot words, W = ceil(m*b*(f+c)/64) (see table)
//	end-8  8     xxh3 64-bit hash of every preceding byte
//
// UnmarshalBinary checks the checksum and every length before allocating,
// and every slot (an empty slot is all zero, an occupied one has a count
// >= 1), and leaves the receiver unchanged on error.
const (
	magic      = "FCCF"
	version    = 1
	headerSize = 40
)

// MarshalBinary encodes f; it is AppendBinary(nil).
func (f *Filter) MarshalBinary() ([]byte, error) { return f.AppendBinary(nil) }

// AppendBinary appends f's encoding to b.
func (f *Filter) AppendBinary(b []byte) ([]byte, error) {
	start := len(b)
	b = append(b, magic...)
	b = append(b, version, byte(f.sh.f), byte(f.sh.c), byte(f.sh.b),
		byte(f.opts.StashSize), byte(f.opts.MaxLevels), byte(len(f.levels)), 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(f.opts.MaxKicks))
	b = binary.LittleEndian.AppendUint64(b, f.opts.Seed)
	b = binary.LittleEndian.AppendUint64(b, f.levels[0].m)
	b = binary.LittleEndian.AppendUint64(b, f.saturations)
	for i := range f.levels {
		t := &f.levels[i]
		b = binary.LittleEndian.AppendUint64(b, t.used)
		b = append(b, byte(len(t.stash)))
		for _, e := range t.stash {
			b = binary.LittleEndian.AppendUint64(b, e.bucket)
			b = binary.LittleEndian.AppendUint64(b, e.fp)
			b = binary.LittleEndian.AppendUint64(b, e.count)
		}
		for _, w := range t.words[:len(t.words)-1] {
			b = binary.LittleEndian.AppendUint64(b, w)
		}
	}
	return binary.LittleEndian.AppendUint64(b, xxh3.Hash(b[start:])), nil
}

func corrupt(format string, a ...any) error {
	return fmt.Errorf("unmarshal counting cuckoo filter: %w: "+format, append([]any{ErrCorrupt}, a...)...)
}

// UnmarshalBinary replaces f with the filter encoded in data.
func (f *Filter) UnmarshalBinary(data []byte) error {
	if len(data) < headerSize+8 {
		return corrupt("%d bytes is shorter than the header", len(data))
	}
	if string(data[:4]) != magic {
		return corrupt("bad magic %q", data[:4])
	}
	if data[4] != version {
		return corrupt("unsupported version %d", data[4])
	}
	body := data[:len(data)-8]
	if xxh3.Hash(body) != binary.LittleEndian.Uint64(data[len(data)-8:]) {
		return corrupt("checksum mismatch")
	}
	maxKicks := binary.LittleEndian.Uint32(data[12:])
	if maxKicks > math.MaxInt32 || data[11] != 0 {
		return corrupt("bad header")
	}
	o := Options{
		FingerprintBits: int(data[5]), CounterBits: int(data[6]), BucketSize: int(data[7]),
		StashSize: int(data[8]), MaxLevels: int(data[9]), MaxKicks: int(maxKicks),
		Seed: binary.LittleEndian.Uint64(data[16:]), Buckets: binary.LittleEndian.Uint64(data[24:]),
	}
	if o.FingerprintBits == 0 || o.CounterBits == 0 || o.BucketSize == 0 || o.StashSize == 0 ||
		o.MaxLevels == 0 || o.MaxKicks == 0 {
		return corrupt("zero parameter")
	}
	if err := o.Validate(); err != nil {
		return corrupt("%v", err)
	}
	o = o.withDefaults()
	o.Capacity = 0
	levels := int(data[10])
	if levels < 1 || levels > o.MaxLevels {
		return corrupt("%d levels, max %d", levels, o.MaxLevels)
	}
	sh := newShape(o.FingerprintBits, o.CounterBits, o.BucketSize)
	// First pass: lengths only, nothing allocated.
	off := uint64(headerSize)
	for l := range levels {
		if off+9 > uint64(len(body)) {
			return corrupt("level %d truncated", l)
		}
		s := uint64(body[off+8])
		if s > uint64(o.StashSize) {
			return corrupt("level %d stash %d > %d", l, s, o.StashSize)
		}
		off += 9 + 24*s + 8*(sh.wordsFor(o.Buckets<<l)-1)
		if off > uint64(len(body)) {
			return corrupt("level %d truncated", l)
		}
	}
	if off != uint64(len(body)) {
		return corrupt("%d trailing bytes", uint64(len(body))-off)
	}
	g := &Filter{opts: o, sh: sh, rng: o.Seed | 1, saturations: binary.LittleEndian.Uint64(data[32:])}
	off = headerSize
	for l := range levels {
		t := sh.newTable(o.Buckets<<l, o.StashSize)
		used := binary.LittleEndian.Uint64(body[off:])
		s := int(body[off+8])
		off += 9
		for range s {
			e := entry{
				bucket: binary.LittleEndian.Uint64(body[off:]),
				fp:     binary.LittleEndian.Uint64(body[off+8:]),
				count:  binary.LittleEndian.Uint64(body[off+16:]),
			}
			off += 24
			if e.bucket >= t.m || e.fp == 0 || e.fp > sh.fpMask || e.count == 0 || e.count > sh.cMax {
				return corrupt("level %d: bad stash entry", l)
			}
			t.stash = append(t.stash, e)
			g.distinct++
			g.total += e.count
		}
		for i := range len(t.words) - 1 {
			t.words[i] = binary.LittleEndian.Uint64(body[off:])
			off += 8
		}
		if err := g.checkTable(&t, used); err != nil {
			return corrupt("level %d: %v", l, err)
		}
		g.levels = append(g.levels, t)
	}
	*f = *g
	return nil
}

// checkTable validates t's slots and padding and adds them to g's totals.
func (g *Filter) checkTable(t *table, used uint64) error {
	sh := &g.sh
	slots := t.m * uint64(sh.b)
	var n uint64
	for i := range slots {
		v := sh.get(t, i)
		fp, c := v&sh.fpMask, v>>sh.f
		if (fp == 0) != (c == 0) {
			return fmt.Errorf("slot %d: fingerprint %d with count %d", i, fp, c)
		}
		if fp != 0 {
			n++
			g.total += c
		}
	}
	if n != used {
		return fmt.Errorf("%d occupied slots, header says %d", n, used)
	}
	bits := slots * uint64(sh.w)
	last := len(t.words) - 2
	if r := bits % 64; r != 0 && last >= 0 && t.words[last]>>r != 0 {
		return fmt.Errorf("nonzero padding")
	}
	t.used = n
	g.distinct += n
	return nil
}
