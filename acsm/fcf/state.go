package fcf

import (
	"encoding/binary"

	"github.com/flowmon/flowmon/internal/snapshot"
)

// State format, version 1 (little-endian):
//
//	"FCF" 1            tag and version
//	params             subtables, bucket cells, buckets, fingerprint and
//	                   state bits, seed, and a digest of where a fixed
//	                   key goes
//	6 x 8              stats: inserts, overflows, updates, deletes,
//	                   don't know, mismatches
//	cell words         the cell array's words (packed.Array.AppendState)
//
// The cells are written as they are in memory: which cell of which bucket
// holds a key decides the d-left choice of later inserts, so a restored
// filter places, answers and overflows as the original would.
const (
	stateTag     = "FCF"
	stateVersion = 1
)

const probeKey = 0x9e3779b97f4a7c15

func (f *Filter) stateParams() []snapshot.Param {
	var first [16]int
	fp := f.locate(probeKey, &first)
	w := []uint64{uint64(fp)}
	for _, c := range first[:f.d] {
		w = append(w, uint64(c))
	}
	return []snapshot.Param{
		snapshot.P("subtables", f.d), snapshot.P("bucket_cells", f.h), snapshot.P("buckets", f.buckets),
		snapshot.P("fingerprint_bits", f.fbits), snapshot.P("state_bits", f.sbits), snapshot.P("seed", f.seed),
		snapshot.P("hash", snapshot.Digest(w...)),
	}
}

// AppendState appends the filter's state: its cells and counters, and the
// shape they belong to.
func (f *Filter) AppendState(b []byte) ([]byte, error) {
	b = snapshot.AppendTag(b, stateTag, stateVersion)
	b = snapshot.AppendParams(b, f.stateParams())
	s := f.stats
	for _, x := range [...]uint64{s.Inserts, s.Overflows, s.Updates, s.Deletes, s.DontKnow, s.Mismatches} {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	return f.cells.AppendState(b), nil
}

// RestoreState replaces the filter's state with the one AppendState wrote
// in b, from a filter of the same shape (else an error wrapping
// snapshot.ErrIncompatible names the parameter that differs). On error
// the filter is unchanged.
func (f *Filter) RestoreState(b []byte) error {
	d := snapshot.NewDecoder("fcf", b)
	d.Tag(stateTag, stateVersion)
	d.Params(f.stateParams())
	var st [6]uint64
	for i := range st {
		st[i] = d.U64()
	}
	cells := d.Bytes(f.cells.StateBytes())
	if err := d.Done(); err != nil {
		return err
	}
	// An empty cell is all zero: Delete and Reset leave no state bits
	// behind a zero fingerprint.
	if err := f.cells.CheckState(cells, func(c uint32) bool { return c == 0 || c>>f.sbits != 0 }); err != nil {
		d.Failf("cells: %v", err)
		return d.Err()
	}
	f.cells.LoadState(cells)
	f.stats = Stats{Inserts: st[0], Overflows: st[1], Updates: st[2], Deletes: st[3], DontKnow: st[4], Mismatches: st[5]}
	return nil
}

// MaxValue is the largest state held by an occupied cell (0 when none):
// the ACSM checks a restored filter against its machine's values, which
// the filter itself does not know.
func (f *Filter) MaxValue() uint32 {
	var m uint32
	mask := uint32(1)<<f.sbits - 1
	for i := range f.cells.Len() {
		if c := f.cells.Get(i); c>>f.sbits != 0 {
			m = max(m, c&mask)
		}
	}
	return m
}
