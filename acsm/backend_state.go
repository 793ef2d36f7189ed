package acsm

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/flowmon/flowmon/acsm/dleft"
	"github.com/flowmon/flowmon/internal/snapshot"
	"github.com/flowmon/flowmon/kbf"
)

// Each backend's state is its own store's state (acsm/dleft, acsm/sbf and
// acsm/fcf write theirs, kbf its MarshalBinary) preceded, for the
// adapters of this package, by the adapter's counters: the tracker's
// statistics are the adapters' counts, not the filters'.

const (
	exactTag     = "EXCT"
	adapterTag   = "BKND"
	backendState = 1
)

// appendBackend appends be's state.
func appendBackend(b []byte, be Backend) ([]byte, error) {
	switch x := be.(type) {
	case *dleft.Table:
		return x.AppendState(b)
	case *Exact:
		return x.appendState(b), nil
	case *sbfBackend:
		return x.f.AppendState(appendAdapter(b, x.st))
	case *fcfBackend:
		return x.f.AppendState(appendAdapter(b, x.st))
	case *kbfBackend:
		return x.f.AppendBinary(appendAdapter(b, x.st))
	}
	return b, fmt.Errorf("save acsm backend %T: no state format", be)
}

// restoreBackend replaces be's state (be freshly built) with the state in
// b, whose values must be below values.
func restoreBackend(be Backend, b []byte, values int) error {
	switch x := be.(type) {
	case *dleft.Table:
		if err := x.RestoreState(b); err != nil {
			return err
		}
		if v := x.MaxState(); v >= uint32(values) {
			return fmt.Errorf("restore dleft table: state %d, the machine has %d: %w", v, values, snapshot.ErrDamaged)
		}
		return nil
	case *Exact:
		return x.restoreState(b, values)
	case *sbfBackend:
		st, rest, err := readAdapter("sbf backend", b)
		if err != nil {
			return err
		}
		if err := x.f.RestoreState(rest); err != nil {
			return err
		}
		x.st = st
		return nil
	case *fcfBackend:
		st, rest, err := readAdapter("fcf backend", b)
		if err != nil {
			return err
		}
		if err := x.f.RestoreState(rest); err != nil {
			return err
		}
		if v := x.f.MaxValue(); v >= uint32(values) {
			return fmt.Errorf("restore fcf backend: state %d, the machine has %d: %w", v, values, snapshot.ErrDamaged)
		}
		x.st = st
		return nil
	case *kbfBackend:
		st, rest, err := readAdapter("kbf backend", b)
		if err != nil {
			return err
		}
		f := new(kbf.Filter)
		if err := f.UnmarshalBinary(rest); err != nil {
			return fmt.Errorf("restore kbf backend: %w: %w", err, snapshot.ErrDamaged)
		}
		if err := snapshot.CheckParams("kbf backend", kbfParams(f), kbfParams(x.f)); err != nil {
			return err
		}
		*x.f = *f
		x.st = st
		return nil
	}
	return fmt.Errorf("restore acsm backend %T: no state format", be)
}

// kbfParams are a kbf filter's shape, for a message naming what differs.
func kbfParams(f *kbf.Filter) []snapshot.Param {
	o := f.Options()
	return []snapshot.Param{
		snapshot.P("capacity", o.Capacity), snapshot.P("fp_rate", o.FPRate), snapshot.P("values", o.Values),
		snapshot.P("cell_bits", o.CellBits), snapshot.P("counter_bits", o.CounterBits),
		snapshot.P("encoder", int(o.Encoder)), snapshot.P("layout", int(o.Layout)), snapshot.P("block_lines", o.BlockLines),
		snapshot.P("size_factor", o.SizeFactor), snapshot.P("seed", o.Seed),
		snapshot.P("cells", f.Cells()), snapshot.P("cells_per_key", f.K()),
	}
}

func appendStats(b []byte, s BackendStats) []byte {
	for _, x := range [...]uint64{s.Inserts, s.InsertFailures, s.Updates, s.Deletes, s.DontKnow, s.DecodeFailures, s.Expired, s.Shed} {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	return b
}

func readStats(d *snapshot.Decoder) BackendStats {
	return BackendStats{Inserts: d.U64(), InsertFailures: d.U64(), Updates: d.U64(), Deletes: d.U64(),
		DontKnow: d.U64(), DecodeFailures: d.U64(), Expired: d.U64(), Shed: d.U64()}
}

// appendAdapter appends an adapter's tag and counters; its filter's state
// follows.
func appendAdapter(b []byte, s BackendStats) []byte {
	return appendStats(snapshot.AppendTag(b, adapterTag, backendState), s)
}

// readAdapter reads an adapter's counters and returns the filter's state
// after them.
func readAdapter(what string, b []byte) (BackendStats, []byte, error) {
	d := snapshot.NewDecoder(what, b)
	d.Tag(adapterTag, backendState)
	st := readStats(d)
	rest := d.Bytes(d.Left())
	return st, rest, d.Err()
}

// appendState appends the map's flows in hash order (the same flows give
// the same bytes), its peak and its counters:
//
//	"EXCT" 1, params (cap), peak, 8 counters, n, n x (hash 8, value 4)
func (e *Exact) appendState(b []byte) []byte {
	b = snapshot.AppendTag(b, exactTag, backendState)
	b = snapshot.AppendParams(b, []snapshot.Param{snapshot.P("cap", e.max)})
	b = binary.LittleEndian.AppendUint64(b, uint64(e.peak))
	b = appendStats(b, e.stats)
	keys := make([]uint64, 0, len(e.m))
	for h := range e.m {
		keys = append(keys, h)
	}
	slices.Sort(keys)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(keys)))
	b = snapshot.Grow(b, 12*len(keys))
	for _, h := range keys {
		b = binary.LittleEndian.AppendUint64(b, h)
		b = binary.LittleEndian.AppendUint32(b, e.m[h])
	}
	return b
}

// restoreState fills the (empty) map from b; on error it is left empty.
func (e *Exact) restoreState(b []byte, values int) error {
	d := snapshot.NewDecoder("exact backend", b)
	d.Tag(exactTag, backendState)
	d.Params([]snapshot.Param{snapshot.P("cap", e.max)})
	peak := d.U64()
	st := readStats(d)
	n := d.Count("flows", uint64(e.max), 12)
	raw := d.Bytes(12 * n)
	if err := d.Done(); err != nil {
		return err
	}
	if peak < uint64(n) || peak > uint64(e.max) {
		d.Failf("peak %d flows with %d held and a cap of %d", peak, n, e.max)
		return d.Err()
	}
	// Hashes come in increasing order, as appendState writes them: one
	// encoding per state, and no flow twice.
	for i := 0; i < len(raw); i += 12 {
		h, v := binary.LittleEndian.Uint64(raw[i:]), binary.LittleEndian.Uint32(raw[i+8:])
		if v >= uint32(values) {
			d.Failf("flow %016x: state %d, the machine has %d", h, v, values)
			break
		}
		if i > 0 && h <= binary.LittleEndian.Uint64(raw[i-12:]) {
			d.Failf("flow %d: hashes out of order", i/12)
			break
		}
		e.m[h] = v
	}
	if err := d.Err(); err != nil {
		clear(e.m)
		return err
	}
	e.peak, e.stats = int(peak), st
	return nil
}
