package kbf

import (
	"testing"

	"github.com/flowmon/flowmon/internal/hashmix"
)

func TestLinePermsArePermutations(t *testing.T) {
	for i, p := range linePerms {
		var seen uint16
		for j := 0; j < 16; j++ {
			seen |= 1 << (p >> (4 * j) & 15)
		}
		if seen != 0xffff {
			t.Fatalf("linePerms[%d] = %#x is no permutation of 0..15", i, p)
		}
	}
}

// TestLinePermsDecode: with random subsets inside the lines, two lines per
// key decode stored keys about as well as the standard layout at 25% more
// cells (lineperm.go; a stride placement leaves many more undecodable
// there: docs/results/kbf-layouts.md, "Placement inside a line").
func TestLinePermsDecode(t *testing.T) {
	const n = 300000
	for _, c := range benchLayouts {
		if c.cells {
			continue // the same filter as blocked2
		}
		f := newT(t, c.options(n))
		for i := 0; i < n; i++ {
			f.Insert(hashmix.Mix(uint64(i)), uint32(i%3000))
		}
		fn, fp := 0, 0
		for i := 0; i < n; i++ {
			if v, r := f.Query(hashmix.Mix(uint64(i))); r != Found || v != uint32(i%3000) {
				fn++
			}
			if _, r := f.Query(hashmix.Mix(uint64(i + n))); r == Found {
				fp++
			}
		}
		t.Logf("%v/%d at %.2fm: %d of %d stored keys not found, %d absent keys found", c.lay, f.groups, c.size, fn, n, fp)
		if fn > 2 || fp > 2 {
			t.Errorf("%v/%d at %.2fm: %d stored keys not found, %d absent found", c.lay, f.groups, c.size, fn, fp)
		}
	}
}
