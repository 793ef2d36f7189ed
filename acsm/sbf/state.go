package sbf

import (
	"encoding/binary"

	"github.com/flowmon/flowmon/internal/hashmix"
	"github.com/flowmon/flowmon/internal/snapshot"
)

// State format, version 1 (little-endian):
//
//	"SBF" 1            tag and version
//	params             m, k, counter and value bits, values, seed, and a
//	                   digest of the cells a fixed key maps to
//	5 x 8              stats: inserts, updates, deletes, don't know, mismatches
//	counts words       the counter array's words (packed.Array.AppendState)
//	value words        the value array's words
//
// The arrays are written as they are in memory, so a restored filter
// answers, updates and saturates exactly as the original would.
const (
	stateTag     = "SBF"
	stateVersion = 1
)

// probeKey is a fixed key whose cells pin the filter's hashing in the
// params: a build that maps keys to cells differently cannot restore.
const probeKey = 0x9e3779b97f4a7c15

func (f *Filter) stateParams() []snapshot.Param {
	h1, h2 := hashmix.Pair(probeKey, f.seed)
	cells := make([]uint64, f.k)
	for i := range cells {
		cells[i] = uint64(f.cell(h1, h2, i))
	}
	return []snapshot.Param{
		snapshot.P("cells", f.m), snapshot.P("cells_per_key", f.k),
		snapshot.P("counter_bits", f.counts.Width()), snapshot.P("value_bits", f.vals.Width()),
		snapshot.P("values", f.dk-1), snapshot.P("seed", f.seed),
		snapshot.P("hash", snapshot.Digest(cells...)),
	}
}

// AppendState appends the filter's state: its cells and counters, and the
// shape they belong to.
func (f *Filter) AppendState(b []byte) ([]byte, error) {
	b = snapshot.AppendTag(b, stateTag, stateVersion)
	b = snapshot.AppendParams(b, f.stateParams())
	s := f.stats
	for _, x := range [...]uint64{s.Inserts, s.Updates, s.Deletes, s.DontKnow, s.Mismatches} {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	b = f.counts.AppendState(b)
	return f.vals.AppendState(b), nil
}

// RestoreState replaces the filter's state with the one AppendState wrote
// in b, from a filter of the same shape (else an error wrapping
// snapshot.ErrIncompatible names the parameter that differs). On error
// the filter is unchanged.
func (f *Filter) RestoreState(b []byte) error {
	d := snapshot.NewDecoder("sbf", b)
	d.Tag(stateTag, stateVersion)
	d.Params(f.stateParams())
	var st [5]uint64
	for i := range st {
		st[i] = d.U64()
	}
	counts := d.Bytes(f.counts.StateBytes())
	vals := d.Bytes(f.vals.StateBytes()) // codes 0 (empty), v+1, or dk
	if err := d.Done(); err != nil {
		return err
	}
	if err := f.counts.CheckState(counts, nil); err != nil {
		d.Failf("counters: %v", err)
	} else if err := f.vals.CheckState(vals, func(v uint32) bool { return v <= f.dk }); err != nil {
		d.Failf("values: %v", err)
	}
	if err := d.Err(); err != nil {
		return err
	}
	f.counts.LoadState(counts)
	f.vals.LoadState(vals)
	f.stats = Stats{Inserts: st[0], Updates: st[1], Deletes: st[2], DontKnow: st[3], Mismatches: st[4]}
	return nil
}
