package kbf

import "github.com/flowmon/flowmon/internal/hashmix"

// Cells inside a line of the blocked layout. A key takes cnt of a line's
// 16 cells (32-bit cells; 32 for 16-bit cells, two halves of 16), and
// which cnt matters: two keys sharing a line should share cells no more
// than chance has them share. An offset and an odd stride (o + j s mod
// 16) do worse: keys with the same stride whose offsets differ by a
// multiple of it share all but a few cells, so overloaded cells come in
// runs and decoding fails more often: with two lines per key a stride
// leaves several times as many stored keys undecodable as random subsets
// do, at 1M and at 10M keys (TestLinePermsDecode;
// docs/results/kbf-layouts.md, "Placement inside a line"). A key's cells
// in a line are the first cnt entries of one of permCount random
// permutations of 0..15, picked by permBits bits of the key's hash: one
// table lookup per line.

const (
	permBits  = 10
	permCount = 1 << permBits
	permMask  = permCount - 1
)

// linePerms[i] packs a permutation of 0..15 in nibbles, first entry in
// the low nibble. The table (8 KiB) is fixed: filters built anywhere place
// keys alike, which Merge and UnmarshalBinary rely on.
var linePerms = func() (t [permCount]uint64) {
	x := uint64(0x6b4266)
	for i := range t {
		var p [16]uint64
		for j := range p {
			p[j] = uint64(j)
		}
		for j := 15; j > 0; j-- { // Fisher-Yates
			x = hashmix.Mix(x + hashmix.Golden)
			r := hashmix.Reduce(x, uint64(j+1))
			p[j], p[r] = p[r], p[j]
		}
		for j, v := range p {
			t[i] |= v << (4 * j)
		}
	}
	return t
}()
