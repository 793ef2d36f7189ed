package dleft

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm/backend"
	"github.com/flowmon/flowmon/internal/snapshot"
)

// TestRestoreContinues: a table restored from a state taken in the middle
// of a churn with aging (cells expiring, sweeps, shedding) answers every
// later operation as the original.
func TestRestoreContinues(t *testing.T) {
	o := Options{Capacity: 2000, Values: 276, Seed: 5, Tier: make([]uint8, 276),
		Timeouts: []time.Duration{2 * time.Second, 10 * time.Second}, Shed: true}
	for v := range o.Tier {
		o.Tier[v] = uint8(v % 2)
	}
	r := rand.New(rand.NewPCG(3, 4))
	type op struct {
		now int64
		k   uint64
		v   uint32
	}
	ops := make([]op, 60000)
	keys := make([]uint64, 0, 4000)
	for i := range ops {
		k := r.Uint64()
		if len(keys) > 0 && r.IntN(2) == 0 {
			k = keys[r.IntN(len(keys))]
		} else if len(keys) < cap(keys) {
			keys = append(keys, k)
		}
		ops[i] = op{now: int64(i) * sec / 2000, k: k, v: uint32(r.IntN(276))}
	}
	apply := func(tb *Table, x op) (uint32, backend.Result, error) {
		tb.Advance(x.now)
		v, res, slot := tb.Find(x.k)
		switch {
		case res == backend.Absent:
			return v, res, tb.Insert(x.k, x.v)
		case res == backend.Found && x.v%5 == 0:
			tb.Clear(slot)
		case res == backend.Found:
			tb.Set(slot, x.v)
		}
		return v, res, nil
	}
	orig := newTable(t, o)
	half := len(ops) / 2
	for _, x := range ops[:half] {
		apply(orig, x)
	}
	state, err := orig.AppendState(nil)
	if err != nil {
		t.Fatal(err)
	}
	rest := newTable(t, o)
	if err := rest.RestoreState(state); err != nil {
		t.Fatal(err)
	}
	for i, x := range ops[half:] {
		v1, r1, e1 := apply(orig, x)
		v2, r2, e2 := apply(rest, x)
		if v1 != v2 || r1 != r2 || (e1 == nil) != (e2 == nil) {
			t.Fatalf("op %d: %d %s %v, restored %d %s %v", half+i, v1, r1, e1, v2, r2, e2)
		}
	}
	if a, b := orig.TableStats(), rest.TableStats(); a != b {
		t.Errorf("stats %+v, restored %+v", a, b)
	}
	sa, _ := orig.AppendState(nil)
	sb, _ := rest.AppendState(nil)
	if !bytes.Equal(sa, sb) {
		t.Error("final states differ")
	}
	if s := orig.TableStats(); s.Expired == 0 || s.Shed == 0 || s.Swept == 0 {
		t.Errorf("the churn does not exercise aging and shedding: %+v", s)
	}
}

func TestRestoreRefuses(t *testing.T) {
	a := newTable(t, Options{Capacity: 2000, Values: 276})
	a.Insert(1, 3)
	state, _ := a.AppendState(nil)
	b := newTable(t, Options{Capacity: 4000, Values: 276})
	err := b.RestoreState(state)
	if !errors.Is(err, snapshot.ErrIncompatible) || !strings.Contains(err.Error(), "snapshot has buckets 78, configured 156") {
		t.Errorf("other capacity: %v", err)
	}
	c := newTable(t, Options{Capacity: 2000, Values: 276})
	bad := bytes.Clone(state)
	binary.LittleEndian.PutUint32(bad[len(bad)-4:], 1) // the last cell: a state, no fingerprint
	if err := c.RestoreState(bad); !errors.Is(err, snapshot.ErrDamaged) || c.Len() != 0 {
		t.Errorf("a cell without a fingerprint: %v, %d cells", err, c.Len())
	}
}
