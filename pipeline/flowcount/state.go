package flowcount

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/flowmon/flowmon/filters/ccf"
	"github.com/flowmon/flowmon/internal/snapshot"
)

// State format, version 1 (little-endian):
//
//	"FCNT" 1           tag and version
//	params             the options (window, expected flows, error rate,
//	                   counter bits, seed) and the filter's shape
//	8 8 8 8            current window's start (Unix ns; math.MinInt64
//	                   before the first packet), packets, dropped, windows
//	                   published
//	8 8 + filter       the current window's filter: its kick generator,
//	                   then its MarshalBinary, length first
//	1                  whether a published window follows:
//	8 8 8 8 1          its start, end, packets, dropped, partial
//	8 8 + filter       its filter, as above
//
// The published window is kept so that /api/v1/ccf answers after a
// restart as before it, instead of 503 until the next window ends.
const (
	stateTag     = "FCNT"
	stateVersion = 1
)

func (c *Counter) stateParams() []snapshot.Param {
	o := c.opts
	fo := c.cur.Options()
	st := c.cur.Stats()
	P := snapshot.P
	return []snapshot.Param{
		P("window", o.Window), P("expected_flows", o.ExpectedFlows), P("fp_rate", o.FPRate),
		P("counter_bits", o.CounterBits), P("seed", o.Seed),
		P("buckets", fo.Buckets), P("fingerprint_bits", fo.FingerprintBits), P("bucket_size", fo.BucketSize),
		P("stash_size", fo.StashSize), P("max_kicks", fo.MaxKicks), P("max_levels", fo.MaxLevels),
		P("slots", st.Slots),
	}
}

// AppendState appends the counter's state: the current window's filter,
// start and counts, and the last published window, with the options they
// belong to. A Counter restored from it with RestoreState counts, rotates
// and serves as this one would. It belongs to the packet goroutine, as
// Add does.
//
// At the engine's default of 2^18 flows per window (error rate 1e-4) it
// is 1.7 MB, twice that once a window has been published.
func (c *Counter) AppendState(b []byte) ([]byte, error) {
	b = snapshot.AppendTag(b, stateTag, stateVersion)
	b = snapshot.AppendParams(b, c.stateParams())
	b = snapshot.AppendTime(b, c.start)
	for _, x := range [...]uint64{c.packets, c.dropped, c.windows.Load()} {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	b, err := appendFilter(b, c.cur)
	if err != nil {
		return b, fmt.Errorf("save flow counter: %w", err)
	}
	s := c.last.Load()
	b = snapshot.AppendBool(b, s != nil)
	if s == nil {
		return b, nil
	}
	b = snapshot.AppendTime(b, s.Start)
	b = snapshot.AppendTime(b, s.End)
	b = binary.LittleEndian.AppendUint64(b, s.Packets)
	b = binary.LittleEndian.AppendUint64(b, s.Dropped)
	b = snapshot.AppendBool(b, s.Partial)
	if b, err = appendFilter(b, s.Filter); err != nil {
		return b, fmt.Errorf("save flow counter: published window: %w", err)
	}
	return b, nil
}

func appendFilter(b []byte, f *ccf.Filter) ([]byte, error) {
	b = binary.LittleEndian.AppendUint64(b, f.KickState())
	return snapshot.AppendBlob(b, f.AppendBinary)
}

// readFilter decodes a filter written by appendFilter and checks it has
// like's shape.
func readFilter(d *snapshot.Decoder, what string, like *ccf.Filter) *ccf.Filter {
	rng := d.U64()
	blob := d.Blob()
	if d.Err() != nil {
		return nil
	}
	f := new(ccf.Filter)
	if err := f.UnmarshalBinary(blob); err != nil {
		d.Failf("%s: %v", what, err)
		return nil
	}
	if err := like.Compatible(f); err != nil {
		d.Mismatchf("%s: %v", what, err)
		return nil
	}
	if got, want := f.Options(), like.Options(); got.MaxKicks != want.MaxKicks || got.StashSize != want.StashSize ||
		got.MaxLevels != want.MaxLevels {
		d.Mismatchf("%s: kicks, stash and levels %d, %d, %d; configured %d, %d, %d", what,
			got.MaxKicks, got.StashSize, got.MaxLevels, want.MaxKicks, want.StashSize, want.MaxLevels)
		return nil
	}
	if err := f.Resume(rng, like); err != nil {
		d.Failf("%s: %v", what, err)
		return nil
	}
	return f
}

// RestoreState replaces the counter's state with the one AppendState
// wrote in b. It is meant for a Counter just built by New with the
// options the state was saved with: a state of other options is refused
// with an error wrapping snapshot.ErrIncompatible that names the first
// that differs, a malformed one with snapshot.ErrDamaged. On error the
// Counter is unchanged. The restored window goes on from where it was:
// if the restart took longer than the window, the first packet after it
// publishes the restored window, as it would have been.
func (c *Counter) RestoreState(b []byte) error {
	d := snapshot.NewDecoder("flow counter", b)
	d.Tag(stateTag, stateVersion)
	d.Params(c.stateParams())
	start := d.Time()
	packets, dropped, windows := d.U64(), d.U64(), d.U64()
	cur := readFilter(d, "current window", c.cur)
	var last *Snapshot
	if d.Bool() {
		last = &Snapshot{Start: d.Time(), End: d.Time(), Packets: d.U64(), Dropped: d.U64(), Partial: d.Bool()}
		last.Filter = readFilter(d, "published window", c.cur)
	}
	if err := d.Done(); err != nil {
		return err
	}
	if !start.IsZero() && !start.Equal(start.Truncate(c.opts.Window)) {
		d.Failf("window start %s is not on a %s boundary", start.Format(time.RFC3339Nano), c.opts.Window)
		return d.Err()
	}
	c.cur, c.start, c.packets, c.dropped = cur, start, packets, dropped
	c.end = time.Time{}
	if !start.IsZero() {
		c.end = start.Add(c.opts.Window)
	}
	c.last.Store(last)
	c.windows.Store(windows)
	return nil
}
