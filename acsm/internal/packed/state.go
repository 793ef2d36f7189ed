package packed

import (
	"encoding/binary"
	"fmt"
)

// StateBytes is the size of the array's state: its words, the spare one
// included, 8 bytes each.
func (a *Array) StateBytes() int { return 8 * len(a.words) }

// AppendState appends the array's words (little-endian).
func (a *Array) AppendState(b []byte) []byte {
	for _, w := range a.words {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	return b
}

// CheckState reports whether raw (StateBytes long) is a state of an array
// of a's shape whose fields all pass valid (nil: any), with the bits past
// the last field zero (Set never writes them). It changes nothing, so a
// filter checks all its arrays before loading any.
func (a *Array) CheckState(raw []byte, valid func(field uint32) bool) error {
	if len(raw) != a.StateBytes() {
		return fmt.Errorf("%d bytes for %d fields of %d bits, want %d", len(raw), a.n, a.w, a.StateBytes())
	}
	word := func(i uint64) uint64 { return binary.LittleEndian.Uint64(raw[8*i:]) }
	if valid != nil {
		for i := range a.n {
			bit := uint64(i) * uint64(a.w)
			wi, off := bit/64, bit%64
			v := word(wi) >> off
			if off+uint64(a.w) > 64 {
				v |= word(wi+1) << (64 - off)
			}
			if f := uint32(v & a.mask); !valid(f) {
				return fmt.Errorf("field %d holds %d", i, f)
			}
		}
	}
	end := uint64(a.n) * uint64(a.w)
	for wi := end / 64; wi < uint64(len(a.words)); wi++ {
		w := word(wi)
		if wi == end/64 {
			w >>= end % 64
		}
		if w != 0 {
			return fmt.Errorf("bits set past the last field, in word %d", wi)
		}
	}
	return nil
}

// LoadState copies raw, which CheckState accepted, into the array.
func (a *Array) LoadState(raw []byte) {
	for i := range a.words {
		a.words[i] = binary.LittleEndian.Uint64(raw[8*i:])
	}
}
