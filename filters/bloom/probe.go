package bloom

import (
	"unsafe"

	"github.com/flowmon/flowmon/internal/hashmix"
	"github.com/flowmon/flowmon/internal/memhint"
)

// Probe is a key's place in a blocked filter, computed once: the block and
// the 512-bit mask of the k bits the key sets in it. Testing is then eight
// word comparisons and inserting eight ORs, with no per-bit branches, and
// filters of one shape (the constituent filters of an FBF) share one
// Probe instead of each recomputing the block and the k positions.
//
// A Probe sets exactly the bits Add sets (the positions, and so the binary
// format, do not change). It is valid for the filter that made it and for
// any other filter of the same shape (m, k and layout); using it with
// another shape gives meaningless answers. For a standard (non-blocked)
// filter it only carries the hash, and the Probe methods run the per-bit
// code.
type Probe struct {
	h    uint64 // the key's hash
	off  uint64 // index of the block's first word
	mask [blockWrds]uint64
}

// lcgJump[i] jumps the LCG i steps at once: y(n+i) = lcgJump[i].mul·y(n)
// + lcgJump[i].add (mod 2^64). A probe runs four interleaved chains, each
// jumping four steps, so the k positions come from four independent
// multiplications at a time instead of one chain of k dependent ones.
var lcgJump = lcgJumps()

type lcgStep struct{ mul, add uint64 }

func lcgJumps() (j [5]lcgStep) {
	j[0] = lcgStep{1, 0}
	for i := 1; i < len(j); i++ {
		j[i] = lcgStep{j[i-1].mul * lcgMul, j[i-1].add*lcgMul + lcgAdd}
	}
	return j
}

// Probe returns h's probe in f (see Probe). On the per-packet path prefer
// SetProbe: a Probe is 80 bytes, and filling it in place saves a copy.
func (f *Filter) Probe(h uint64) Probe {
	var p Probe
	f.SetProbe(&p, h)
	return p
}

// SetProbe sets p to h's probe in f: the block and positions of the per-bit
// algorithm (see the package doc), gathered into a mask.
func (f *Filter) SetProbe(p *Probe, h uint64) {
	p.h = h
	if !f.blocked {
		return
	}
	p.off = f.blockOff(h)
	y0 := hashmix.Mix(h ^ lcgAdd)
	y1 := y0*lcgMul + lcgAdd
	y2 := y0*lcgJump[2].mul + lcgJump[2].add
	y3 := y0*lcgJump[3].mul + lcgJump[3].add
	j4 := lcgJump[4]
	m := &p.mask
	*m = [blockWrds]uint64{}
	// Position i is the top 9 bits of y(i): its top 3 bits pick the word.
	k := f.k
	for ; k >= 4; k -= 4 {
		m[y0>>61] |= 1 << (y0 >> 55 & 63)
		m[y1>>61] |= 1 << (y1 >> 55 & 63)
		m[y2>>61] |= 1 << (y2 >> 55 & 63)
		m[y3>>61] |= 1 << (y3 >> 55 & 63)
		y0, y1, y2, y3 = y0*j4.mul+j4.add, y1*j4.mul+j4.add, y2*j4.mul+j4.add, y3*j4.mul+j4.add
	}
	for ; k > 0; k-- {
		m[y0>>61] |= 1 << (y0 >> 55 & 63)
		y0, y1, y2 = y1, y2, y3
	}
}

// block is the probe's block in f.
func (f *Filter) block(p *Probe) *[blockWrds]uint64 {
	return (*[blockWrds]uint64)(f.words[p.off : p.off+blockWrds])
}

// TestProbe is Test for a probe made by f or a filter of f's shape.
func (f *Filter) TestProbe(p *Probe) bool {
	if !f.blocked {
		return f.Test(p.h)
	}
	return missing(f.block(p), &p.mask) == 0
}

// AddProbe is Add for a probe made by f or a filter of f's shape.
func (f *Filter) AddProbe(p *Probe) { f.TestAndAddProbe(p) }

// TestAndAddProbe is TestAndAdd for a probe made by f or a filter of f's
// shape: it reports whether every bit was set, sets them, and counts the
// key when one was not.
func (f *Filter) TestAndAddProbe(p *Probe) bool {
	if !f.blocked {
		return f.TestAndAdd(p.h)
	}
	b, m := f.block(p), &p.mask
	miss := missing(b, m)
	// Written out, as missing is: a loop costs as many instructions again
	// in index and branch as the ORs themselves.
	b[0] |= m[0]
	b[1] |= m[1]
	b[2] |= m[2]
	b[3] |= m[3]
	b[4] |= m[4]
	b[5] |= m[5]
	b[6] |= m[6]
	b[7] |= m[7]
	if miss != 0 {
		f.count++
		return false
	}
	return true
}

// missing returns the bits of mask m not set in block b: Test is true when
// there are none, decided with one branch instead of one per bit.
func missing(b, m *[blockWrds]uint64) uint64 {
	return m[0]&^b[0] | m[1]&^b[1] | m[2]&^b[2] | m[3]&^b[3] |
		m[4]&^b[4] | m[5]&^b[5] | m[6]&^b[6] | m[7]&^b[7]
}

// blockOff is the index of the first word of h's block in a blocked
// filter.
func (f *Filter) blockOff(h uint64) uint64 {
	return hashmix.Reduce(hashmix.Mix(h), f.blocks) * blockWrds
}

// Prefetch starts loading the block that an operation on h reads in each
// of fs, and returns at once; it changes nothing. The filters have one
// shape (an FBF's), so the block is found once for all. Standard filters
// are not prefetched (their k bits are anywhere).
func Prefetch(h uint64, fs []*Filter) {
	if len(fs) == 0 || !fs[0].blocked {
		return
	}
	off := fs[0].blockOff(h)
	for i := 0; i < len(fs); i += 2 {
		a := unsafe.Pointer(&fs[i].words[off])
		b := a
		if i+1 < len(fs) {
			b = unsafe.Pointer(&fs[i+1].words[off])
		}
		memhint.Prefetch2(a, b)
	}
}
