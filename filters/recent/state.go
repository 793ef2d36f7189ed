package recent

import (
	"unsafe"

	"github.com/flowmon/flowmon/internal/period"
	"github.com/flowmon/flowmon/internal/snapshot"
)

// State format, version 2 (little-endian):
//
//	"RCNT" 2           tag and version
//	params             buckets, tick (ns), seed, and where a fixed key goes
//	1                  whether the clock has started
//	3 x 8              packet time (ns), sweep due from, sweep cursor
//	7 x 8              live cells, inserted, overwritten, and the
//	                   published live, held, inserted, overwritten
//	128 x 4            keys inserted in each of the last 128 ticks, by tag
//	cells              buckets x 16 words x 4 bytes, as in memory (15
//	                   cells and the bucket's cursor)
//
// A cell's tag is a tick of packet time, so the clock is part of the
// state: with it a restored table forgets and sweeps the same cells at the
// same packets as the original. A version-1 state (which also held a
// count of the buckets swept) is refused by its version.
const (
	stateTag     = "RCNT"
	stateVersion = 2
	probeKey     = 0x9e3779b97f4a7c15
)

func (t *Table) stateParams() []snapshot.Param {
	i, f := t.locate(probeKey)
	return []snapshot.Param{
		snapshot.P("buckets", t.nb), snapshot.P("tick_ns", t.tickNs), snapshot.P("seed", t.seed),
		snapshot.P("hash", snapshot.Digest(i, uint64(f))),
	}
}

// AppendState appends the table's state: its cells, its clock and its
// counters, with the shape they belong to. At dedup's defaults (50,000
// packets in 50 ms) it is 1 MB, the table's own size.
func (t *Table) AppendState(b []byte) ([]byte, error) {
	b = snapshot.AppendTag(b, stateTag, stateVersion)
	b = snapshot.AppendParams(b, t.stateParams())
	b = snapshot.AppendBool(b, t.started)
	b = snapshot.AppendUint64s(b, []uint64{uint64(t.now), uint64(t.sweptAt), t.cursor,
		t.live, t.inserted, t.overwritten,
		t.pub.live.Load(), t.pub.held.Load(), t.pub.inserted.Load(), t.pub.overwritten.Load()})
	b = snapshot.AppendUint32s(b, t.perTick[:])
	return snapshot.AppendUint32s(b, unsafe.Slice(&t.buckets[0][0], len(t.buckets)*len(t.buckets[0]))), nil
}

// RestoreState replaces the table's state with the one AppendState wrote
// in b, from a table of the same shape (else an error wrapping
// snapshot.ErrIncompatible names the parameter that differs; a malformed
// state, snapshot.ErrDamaged). On error the table is unchanged.
func (t *Table) RestoreState(b []byte) error {
	d := snapshot.NewDecoder("recent table", b)
	d.Tag(stateTag, stateVersion)
	d.Params(t.stateParams())
	started := d.Bool()
	var n [10]uint64
	d.Uint64s(n[:])
	var perTick [1 << tagBits]uint32
	d.Uint32s(perTick[:])
	words := len(t.buckets[0])
	cells := make([]uint32, len(t.buckets)*words)
	d.Uint32s(cells)
	if err := d.Done(); err != nil {
		return err
	}
	if n[2] >= t.nb {
		d.Failf("sweep cursor %d past %d buckets", n[2], t.nb)
		return d.Err()
	}
	var used uint64
	for i, c := range cells {
		if i%words == CellsPerBucket {
			if c >= CellsPerBucket {
				d.Failf("bucket %d: cursor %d past its %d cells", i/words, c, CellsPerBucket)
				return d.Err()
			}
			continue
		}
		if c == 0 {
			continue
		}
		if c>>tagBits == 0 {
			d.Failf("cell %d: a tick without a fingerprint", i)
			return d.Err()
		}
		used++
	}
	if used != n[3] {
		d.Failf("%d cells used, the state says %d", used, n[3])
		return d.Err()
	}
	copy(unsafe.Slice(&t.buckets[0][0], len(cells)), cells)
	t.started, t.now, t.sweptAt, t.cursor = started, int64(n[0]), int64(n[1]), n[2]
	t.live, t.inserted, t.overwritten = n[3], n[4], n[5]
	t.pub.live.Store(n[6])
	t.pub.held.Store(n[7])
	t.pub.inserted.Store(n[8])
	t.pub.overwritten.Store(n[9])
	t.perTick = perTick
	// The tick is worked out again from the clock (Advance starts it
	// for a clock not started).
	t.tickNo, t.tickEnd = 0, 0
	if started {
		t.setTick(period.Of(t.now, t.tickNs))
	}
	return nil
}
