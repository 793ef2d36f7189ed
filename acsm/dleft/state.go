package dleft

import (
	"encoding/binary"
	"unsafe"

	"github.com/flowmon/flowmon/acsm/backend"
	"github.com/flowmon/flowmon/internal/snapshot"
)

// State format, version 1 (little-endian):
//
//	"DLFT" 1           tag and version
//	params             buckets per subtable, fingerprint and state bits,
//	                   seed, a digest of the state-to-tier table, each
//	                   tier's tick, shed and its tier, the sweep period,
//	                   and a digest of where a fixed key goes
//	8                  live cells
//	4 x 4              each tier's current tick
//	8 x 4              packet time (ns), next tick change, sweep due
//	                   from, sweep cursor
//	10 x 8             stats: inserts, insert failures, updates, deletes,
//	                   don't know, decode failures, expired, shed,
//	                   duplicates, swept
//	cells              2B buckets x 16 cells x 4 bytes, as in memory
//
// A cell's tag is a tick of packet time, so the clock (the packet time,
// the tier ticks, where the sweep stands) is part of the state: with it a
// restored table expires, sweeps and sheds the same cells at the same
// packets as the original.
const (
	stateTag     = "DLFT"
	stateVersion = 1
)

const probeKey = 0x9e3779b97f4a7c15

func (t *Table) stateParams() []snapshot.Param {
	b0, b1, fp0, fp1 := t.locate(probeKey)
	tiers := make([]uint64, len(t.tier))
	for i, x := range t.tier {
		tiers[i] = uint64(x)
	}
	return []snapshot.Param{
		snapshot.P("buckets", t.nb), snapshot.P("fingerprint_bits", t.fbits), snapshot.P("state_bits", t.sbits),
		snapshot.P("seed", t.seed), snapshot.P("tiers", snapshot.Digest(tiers...)),
		snapshot.P("tick_ns", snapshot.Digest(uint64(t.tickNs[0]), uint64(t.tickNs[1]), uint64(t.tickNs[2]), uint64(t.tickNs[3]))),
		snapshot.P("shed", t.shed), snapshot.P("shed_tier", t.shedTier), snapshot.P("sweep_ns", t.sweepNs),
		snapshot.P("hash", snapshot.Digest(b0, b1, uint64(fp0), uint64(fp1))),
	}
}

// AppendState appends the table's state: its cells, its clock and its
// counters, and the shape they belong to. At the default capacity of
// 2^18 flows it is 1.3 MB, the table's own size.
func (t *Table) AppendState(b []byte) ([]byte, error) {
	b = snapshot.AppendTag(b, stateTag, stateVersion)
	b = snapshot.AppendParams(b, t.stateParams())
	b = binary.LittleEndian.AppendUint64(b, uint64(t.live))
	for _, k := range t.tickNow {
		b = binary.LittleEndian.AppendUint32(b, k)
	}
	for _, x := range [...]int64{t.now, t.nextTick, t.sweptAt, int64(t.cursor)} {
		b = binary.LittleEndian.AppendUint64(b, uint64(x))
	}
	s := t.stats
	for _, x := range [...]uint64{s.Inserts, s.InsertFailures, s.Updates, s.Deletes, s.DontKnow,
		s.DecodeFailures, s.Expired, s.Shed, s.Duplicates, s.Swept} {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	return snapshot.AppendUint32s(b, unsafe.Slice(&t.buckets[0][0], cellsPerBucket*len(t.buckets))), nil
}

// RestoreState replaces the table's state with the one AppendState wrote
// in b, from a table of the same shape (else an error wrapping
// snapshot.ErrIncompatible names the parameter that differs). On error
// the table is unchanged.
func (t *Table) RestoreState(b []byte) error {
	d := snapshot.NewDecoder("dleft table", b)
	d.Tag(stateTag, stateVersion)
	d.Params(t.stateParams())
	live := d.U64()
	var ticks [MaxTiers + 1]uint32
	for i := range ticks {
		ticks[i] = d.U32()
	}
	now, nextTick, sweptAt, cursor := d.I64(), d.I64(), d.I64(), d.U64()
	var st [10]uint64
	for i := range st {
		st[i] = d.U64()
	}
	cells := make([]uint32, len(t.buckets)*cellsPerBucket)
	d.Uint32s(cells)
	if err := d.Done(); err != nil {
		return err
	}
	if cursor >= uint64(len(t.buckets)) {
		d.Failf("sweep cursor %d past %d buckets", cursor, len(t.buckets))
		return d.Err()
	}
	// A used cell has a fingerprint (never 0); live counts the used cells.
	var used uint64
	for i, c := range cells {
		if c == 0 {
			continue
		}
		if c>>t.shift() == 0 {
			d.Failf("cell %d: state without a fingerprint", i)
			return d.Err()
		}
		used++
	}
	if used != live {
		d.Failf("%d cells used, the state says %d", used, live)
		return d.Err()
	}
	copy(unsafe.Slice(&t.buckets[0][0], len(cells)), cells)
	t.live = int(live)
	t.tickNow = ticks
	t.now, t.nextTick, t.sweptAt, t.cursor = now, nextTick, sweptAt, int(cursor)
	t.stats = Stats{Stats: statsOf(st[:8]), Duplicates: st[8], Swept: st[9]}
	return nil
}

func statsOf(s []uint64) backend.Stats {
	return backend.Stats{Inserts: s[0], InsertFailures: s[1], Updates: s[2], Deletes: s[3], DontKnow: s[4],
		DecodeFailures: s[5], Expired: s[6], Shed: s[7]}
}

// MaxState is the largest state held by a used cell, "don't know" cells
// left out (0 when none): the ACSM checks a restored table against its
// machine's values, which the table itself does not know.
func (t *Table) MaxState() uint32 {
	var m uint32
	for i := range t.buckets {
		for _, c := range &t.buckets[i] {
			if v := c & t.smask; c != 0 && v != t.dk {
				m = max(m, v)
			}
		}
	}
	return m
}
