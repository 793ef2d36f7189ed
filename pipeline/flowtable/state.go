package flowtable

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"
)

// The flow table's state in a snapshot (snapshot.go): its scalars, then
// its arrays as they lie in memory. The arrays hold no pointers, so their
// bytes are the state; they are read back on the same architecture only
// (the snapshot's params name it, and the element sizes are checked here).
// A restore checks every index before using it, so a damaged state is
// refused, never followed.

// StateVersion changes when a struct below changes layout or the
// metas' count changes for a cap, so a state written by another layout
// is refused by its version, not taken for a damaged one.
const StateVersion = 3

// AppendState appends the table's state to b: its scalars, then its
// arrays as they lie in memory.
func (t *Table) AppendState(b []byte) []byte {
	u := func(v uint64) { b = binary.LittleEndian.AppendUint64(b, v) }
	u(StateVersion)
	u(uint64(unsafe.Sizeof(slotMeta{})))
	u(uint64(unsafe.Sizeof(flowSlot{})))
	u(uint64(unsafe.Sizeof(recordFields{})))
	u(uint64(unsafe.Sizeof(endedFlow{})))
	u(uint64(t.maxFlows))
	u(uint64(len(t.meta)))
	u(uint64(t.fresh))
	u(uint64(len(t.free)))
	u(uint64(t.nEnded))
	u(uint64(t.hand))
	u(uint64(t.lastNow))
	u(uint64(t.frac))
	u(uint64(b2i(t.recs != nil)))
	b = append(b, bytesOf(t.meta)...)
	b = append(b, bytesOf(t.slots[:t.fresh])...)
	if t.recs != nil {
		b = append(b, bytesOf(t.recs[:t.fresh])...)
		b = append(b, bytesOf(t.parents[:t.fresh])...)
	}
	b = append(b, bytesOf(t.free)...)
	for k := range t.nEnded {
		b = append(b, bytesOf(t.ended[(t.head+k)%len(t.ended):(t.head+k)%len(t.ended)+1])...)
	}
	return b
}

// bytesOf is s's memory as bytes.
func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// RestoreState replaces the empty table's flows with the state in b and
// returns how many open (not ended) flows it took over. The table must
// have the snapshot's max-flows; on an error it is left empty.
func (t *Table) RestoreState(b []byte) (open uint64, err error) {
	if t.count != 0 || t.fresh != 0 {
		return 0, errors.New("flow table: restore into a table in use")
	}
	r := stateReader{b: b}
	version := r.u64()
	sizes := [4]uint64{r.u64(), r.u64(), r.u64(), r.u64()}
	maxFlows, nMeta, fresh, nFree, nEnded := r.u64(), r.u64(), r.u64(), r.u64(), r.u64()
	hand, lastNow, frac, recsWord := r.u64(), int64(r.u64()), int64(r.u64()), r.u64()
	hasRecs := recsWord == 1
	switch {
	case r.short:
		return 0, errors.New("flow table: state truncated")
	case recsWord > 1:
		return 0, fmt.Errorf("flow table: state damaged (records flag %d)", recsWord)
	case version != StateVersion:
		return 0, fmt.Errorf("flow table: state version %d, this flowmon reads %d", version, StateVersion)
	case sizes != [4]uint64{uint64(unsafe.Sizeof(slotMeta{})), uint64(unsafe.Sizeof(flowSlot{})),
		uint64(unsafe.Sizeof(recordFields{})), uint64(unsafe.Sizeof(endedFlow{}))}:
		return 0, errors.New("flow table: state from another build of flowmon (record layout differs)")
	case maxFlows != uint64(t.maxFlows):
		return 0, fmt.Errorf("flow table: snapshot has max-flows %d per shard, configured %d", maxFlows, t.maxFlows)
	case nMeta != uint64(len(t.meta)) || fresh > maxFlows || nFree > fresh || nEnded > maxFlows ||
		hand >= nMeta || frac < 0:
		return 0, errors.New("flow table: state damaged (sizes out of range)")
	}
	meta := r.bytes(int(nMeta) * int(sizes[0]))
	slots := r.bytes(int(fresh) * int(sizes[1]))
	var recs, parents []byte
	if hasRecs {
		recs = r.bytes(int(fresh) * int(sizes[2]))
		parents = r.bytes(int(fresh) * 8)
	}
	free := r.bytes(int(nFree) * 4)
	ended := r.bytes(int(nEnded) * int(sizes[3]))
	if r.short || len(r.b) != 0 {
		return 0, errors.New("flow table: state damaged (length does not match its sizes)")
	}
	copy(bytesOf(t.meta), meta)
	copy(bytesOf(t.slots[:fresh]), slots)
	if t.recs != nil && recs != nil {
		// All fresh slots', held or free, as slots above: the state is
		// what it encodes back to.
		copy(bytesOf(t.recs[:fresh]), recs)
		copy(bytesOf(t.parents[:fresh]), parents)
	}
	t.free = t.free[:nFree]
	copy(bytesOf(t.free), free)
	copy(bytesOf(t.ended[:nEnded]), ended)
	if err := t.checkRestored(uint32(fresh)); err != nil {
		t.clearRestored()
		return 0, err
	}
	t.fresh, t.hand, t.lastNow, t.frac = uint32(fresh), int(hand), lastNow, frac
	t.head, t.nEnded = 0, int(nEnded)
	for i := range t.meta {
		if t.meta[i].hash == 0 {
			continue
		}
		t.count++
		e := &t.slots[t.meta[i].idx]
		if !e.ended {
			open++
		}
		// Records: the snapshot's (copied above), or, when it was taken
		// without a flow log, a record that starts at the restore.
		if t.recs != nil && recs == nil {
			t.recs[t.meta[i].idx] = recordFields{first: lastNow, last: lastNow}
			t.parents[t.meta[i].idx] = 0
		}
	}
	if t.recs != nil && recs != nil {
		for idx := range t.fresh {
			if h := &t.recs[idx].conn; h.nhist > histMax || !validHistory(h) {
				t.clearRestored()
				return 0, errors.New("flow table: state damaged (a flow's history)")
			}
		}
	}
	// The restored open flows are this run's: they count in its flows
	// (and conn_states when they end) as the saving run did not.
	t.distinct += open
	return open, nil
}

// checkRestored checks the indexes of the copied metas and free list,
// that every meta's slot is used once and not free, that every slot is
// one or the other, and that every flow is found from its home.
func (t *Table) checkRestored(fresh uint32) error {
	used := make([]bool, fresh)
	for i := range t.meta {
		m := &t.meta[i]
		if m.hash == 0 {
			continue
		}
		if m.hash&1 == 0 || m.idx >= fresh || used[m.idx] {
			return errors.New("flow table: state damaged (a slot index)")
		}
		used[m.idx] = true
	}
	for _, idx := range t.free {
		if idx >= fresh || used[idx] {
			return errors.New("flow table: state damaged (the free list)")
		}
		used[idx] = true
	}
	// Every slot ever used is held or free: one that is neither would be
	// lost, and a table that reached its cap would then index past its
	// slots for the next flow.
	for _, u := range used {
		if !u {
			return errors.New("flow table: state damaged (a slot neither held nor free)")
		}
	}
	// Every flow is where a lookup from its home finds it, the only one
	// of its key: a meta placed elsewhere would never be found, and its
	// flow's next packet would start a second one.
	for i := range t.meta {
		m := &t.meta[i]
		if m.hash == 0 {
			continue
		}
		if j, ok := t.lookup(m.hash, &t.slots[m.idx].key); !ok || j != i {
			return errors.New("flow table: state damaged (a flow out of its place)")
		}
	}
	return nil
}

// validHistory reports whether every letter of h's history is one, and
// nothing is written past them.
func validHistory(h *Conn) bool {
	for i := range h.nhist {
		w, sh := i/12, uint(i%12)*5
		if int(h.hist[w]>>sh&31) >= len(histLetters) {
			return false
		}
	}
	// The bits past the last letter are zero, as addLetter leaves them:
	// it ORs the next letter in.
	for w := range h.hist {
		used := max(0, min(12, int(h.nhist)-12*w)) * 5
		if used < 64 && h.hist[w]>>used != 0 {
			return false
		}
	}
	return true
}

// clearRestored empties a table a failed restore wrote into.
func (t *Table) clearRestored() {
	clear(t.meta)
	clear(t.slots)
	if t.recs != nil {
		clear(t.recs)
		clear(t.parents)
	}
	t.free = t.free[:0]
	clear(t.ended)
	t.count, t.fresh, t.nEnded, t.head, t.hand = 0, 0, 0, 0, 0
}

// Carry ends the run of a table whose open flows went into a snapshot:
// they are written nowhere and not counted (the next run does both),
// while flows that ended in this run are counted here, as they were when
// they ended (SaveSnapshot wrote their records). It frees the table.
func (t *Table) Carry() {
	t.distinct -= min(t.distinct, t.OpenFlows())
	t.meta, t.slots, t.recs, t.parents, t.free, t.ended, t.count, t.nEnded = nil, nil, nil, nil, nil, nil, 0, 0
	t.mem.free()
	t.publishStates()
}

// stateReader reads a state's fields in order; a read past the end sets
// short and yields zeros.
type stateReader struct {
	b     []byte
	short bool
}

func (r *stateReader) u64() uint64 {
	if len(r.b) < 8 {
		r.short, r.b = true, nil
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *stateReader) bytes(n int) []byte {
	if n < 0 || len(r.b) < n {
		r.short, r.b = true, nil
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

// OpenFlows is how many flows the table holds that have not ended.
func (t *Table) OpenFlows() (n uint64) {
	for i := range t.meta {
		if t.meta[i].hash != 0 && !t.slots[t.meta[i].idx].ended {
			n++
		}
	}
	return n
}
