package ccf

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/flowmon/flowmon/internal/memhint"
)

// Reading and writing packed slots, on the per-packet path of every
// counter (flowcount counts each packet with Insert).
//
// A slot of w bits starting at bit p of the table's bit string lies in
// bytes p>>3 .. (p+w-1)>>3. On a little-endian machine the bytes of the
// words are the string's bytes in order, so one unaligned 8-byte load at
// byte p>>3, shifted down by p&7 <= 7, holds all of a slot of up to 57
// bits: one load and one shift, with no branch on whether the slot
// straddles two words. That branch (the per-slot reference scan of
// ref_test.go takes it) goes one way for 3 slots in 4 of flowcount's
// 49-bit slots, in an order no predictor learns, and its mispredictions
// cost more than the reads (BenchmarkInsertPaired).
// Wider slots (and big-endian machines) read the slot's first and last
// words and join them with shifts, also without a branch.
//
// The layout is unchanged (filters are exchanged between agents): only
// the reads are.

// maxByteLoad is the widest field one 8-byte load holds wherever it
// starts in its first byte.
const maxByteLoad = 64 - 7

// littleEndian reports whether the words' bytes are the bit string's bytes
// in order.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// bytesOf returns the bytes of words. An 8-byte load at the byte of any
// slot's first bit stays inside them thanks to the pad word.
func bytesOf(words []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), len(words)*8)
}

// load returns the 8 bytes of b from byte k as a little-endian word (one
// unaligned load on the machines where fpBytes and slotBytes are set).
func load(b []byte, k uint64) uint64 { return binary.LittleEndian.Uint64(b[k : k+8 : k+8]) }

// funnel returns the bits of words from bit p on, at least 64-(p&63) of
// them and all of a field of up to 64 bits whose last bit is in
// words[last]. For a field inside one word, last is p>>6 and the bits
// shifted up by 64-(p&63) land above the field, where the caller's mask
// drops them; for p&63 = 0 the two-step shift gives 0.
func funnel(words []uint64, p, last uint64) uint64 {
	off := p & 63
	return words[p>>6]>>off | words[last]<<1<<(63-off)
}

// get returns slot i's raw value.
func (s *shape) get(t *table, i uint64) uint64 {
	p := i * uint64(s.w)
	if s.slotBytes {
		return load(bytesOf(t.words), p>>3) >> (p & 7) & s.slotMask
	}
	return funnel(t.words, p, (p+uint64(s.w)-1)>>6) & s.slotMask
}

// set stores v (already masked) in slot i, rewriting the other bits of the
// bytes or words it touches unchanged.
func (s *shape) set(t *table, i, v uint64) {
	p := i * uint64(s.w)
	if s.slotBytes {
		b := bytesOf(t.words)
		k, off := p>>3, p&7
		binary.LittleEndian.PutUint64(b[k:k+8:k+8], load(b, k)&^(s.slotMask<<off)|v<<off)
		return
	}
	// As funnel: when the slot's last word is its first, or off = 0,
	// the second write changes nothing.
	k, last, off := p>>6, (p+uint64(s.w)-1)>>6, p&63
	t.words[k] = t.words[k]&^(s.slotMask<<off) | v<<off
	t.words[last] = t.words[last]&^(s.slotMask>>1>>(63-off)) | v>>1>>(63-off)
}

// find looks for fp in its buckets i1 and i2 = alt(i1, fp) and in the
// stash, and returns the first match in the order of the per-slot
// reference scan: bucket i1's slots, then i2's, then the stash. It
// computes i2 (a hash of fp) only when i1 does not hold fp: most elements
// sit in the first bucket they tried.
func (s *shape) find(t *table, fp, i1 uint64) uint64 {
	b := uint64(s.b)
	if m := s.match(t, fp, i1); m != 0 {
		return i1*b + uint64(bits.TrailingZeros64(m))
	}
	i2 := alt(i1, fp, t.m)
	if i2 != i1 {
		if m := s.match(t, fp, i2); m != 0 {
			return i2*b + uint64(bits.TrailingZeros64(m))
		}
	}
	for k := range t.stash {
		e := &t.stash[k]
		if e.fp == fp && (e.bucket == i1 || e.bucket == i2) {
			return locStash | uint64(k)
		}
	}
	return locNone
}

// match returns the slots of bucket i that hold fingerprint fp, as a mask
// (bit j for slot j). Every slot is compared without a branch: with
// d = (fingerprint XOR fp) & fpMask < 2^60, d-1 has bit 63 set exactly
// when d = 0, the zero-lane test of word-parallel (SWAR) code done one
// lane at a time. The one branch left, on the mask, is per bucket instead
// of per slot. (Two lanes in one load would need w+f <= 57; flowcount's
// slots have w+f = 49+17.)
func (s *shape) match(t *table, fp, i uint64) uint64 {
	w, n := uint64(s.w), uint64(s.b)
	p := (i*n + n - 1) * w // the last slot first: m shifts up a slot a time
	var m uint64
	if s.fpBytes {
		b := bytesOf(t.words)
		for range n {
			d := (load(b, p>>3)>>(p&7) ^ fp) & s.fpMask
			m = m<<1 | (d-1)>>63
			p -= w
		}
		return m
	}
	f, words := uint64(s.f), t.words
	for range n {
		d := (funnel(words, p, (p+f-1)>>6) ^ fp) & s.fpMask
		m = m<<1 | (d-1)>>63
		p -= w
	}
	return m
}

// empty returns the first free slot of bucket i, or locNone.
func (s *shape) empty(t *table, i uint64) uint64 {
	if m := s.free(t, i); m != 0 {
		return i*uint64(s.b) + uint64(bits.TrailingZeros64(m))
	}
	return locNone
}

// free returns the empty slots of bucket i as a mask, read as match reads
// them: (v-1) &^ v has bit 63 set exactly when v = 0, for any v.
func (s *shape) free(t *table, i uint64) uint64 {
	w, n := uint64(s.w), uint64(s.b)
	p := (i*n + n - 1) * w
	var m uint64
	if s.slotBytes {
		b := bytesOf(t.words)
		for range n {
			v := load(b, p>>3) >> (p & 7) & s.slotMask
			m = m<<1 | ((v-1)&^v)>>63
			p -= w
		}
		return m
	}
	words := t.words
	for range n {
		v := funnel(words, p, (p+w-1)>>6) & s.slotMask
		m = m<<1 | ((v-1)&^v)>>63
		p -= w
	}
	return m
}

// prefetch starts loading the cache lines where buckets i1 and i2
// begin. A bucket that runs onto the next line (a 196-bit bucket does
// about one time in three) has its second line left out: a second
// Prefetch2 for the ends costs more than the misses it saves
// (docs/results/ccf.md, "Prefetching a bucket's second line").
func (s *shape) prefetch(t *table, i1, i2 uint64) {
	bb := uint64(s.b) * uint64(s.w)
	base := unsafe.Pointer(unsafe.SliceData(t.words))
	memhint.Prefetch2(unsafe.Add(base, i1*bb>>6<<3), unsafe.Add(base, i2*bb>>6<<3))
}
