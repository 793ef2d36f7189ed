package hll

import (
	"sync/atomic"
	"unsafe"

	"github.com/flowmon/flowmon/internal/hashmix"
)

// grid is the count-min grid Spread and BitSpread share: depth rows of
// width cells of cellWords words, a key's cell in each row derived from
// its hash as the cms package derives its counters' (see the package
// doc). The cells' contents, registers or bits, are the sketch's.
type grid struct {
	words     []atomic.Uint64 // depth·width cells of cellWords words, row after row
	width     uint64
	depth     int
	cellWords uint64
	seed      uint64
}

func newGrid(width, depth int, cellWords, seed uint64) grid {
	return grid{
		words:     make([]atomic.Uint64, uint64(width)*uint64(depth)*cellWords),
		width:     uint64(width),
		depth:     depth,
		cellWords: cellWords,
		seed:      seed,
	}
}

// cells fills off[:depth] with the first word of the key's cell in each
// row.
func (g *grid) cells(keyHash uint64, off *[MaxDepth]uint64) {
	h1 := hashmix.Mix(keyHash ^ g.seed)
	row := uint64(0)
	for r := range g.depth {
		off[r] = (row + hashmix.Nth(h1, r, g.width)) * g.cellWords
		row += g.width
	}
}

// Reset zeroes every cell with atomic stores. It may run while other
// goroutines Add: see the package doc.
func (g *grid) Reset() { clearWords(g.words) }

// Clear zeroes every cell as Reset does, with one memory clear instead of
// an atomic store per word, but it must not run while another goroutine
// uses the sketch (see cms.Sketch.Clear).
func (g *grid) Clear() {
	if len(g.words) > 0 {
		clear(unsafe.Slice((*uint64)(unsafe.Pointer(&g.words[0])), len(g.words)))
	}
}

// Bytes is the memory of the cells: width·depth·cellWords·8 bytes.
func (g *grid) Bytes() int { return 8 * len(g.words) }

// Width is the cells per row.
func (g *grid) Width() int { return int(g.width) }

// Depth is the number of rows.
func (g *grid) Depth() int { return g.depth }

// Seed is the seed the keys' cells were derived with.
func (g *grid) Seed() uint64 { return g.seed }
