package scbf

import (
	"fmt"
	"math"

	"github.com/flowmon/flowmon/internal/hashmix"
	"github.com/zeebo/xxh3"
)

// loaded is a checked image: its options, sub-filters and state.
type loaded struct {
	opts  Options
	subs  []sub
	end   int // bytes in use: the file may be longer after a growth cut short
	state OpenState
}

// fromLoaded is the filter over a loaded image (on the heap until the
// caller sets its file).
func fromLoaded(l loaded, mem []byte, boot uint64) *Filter {
	return &Filter{opts: l.opts, mem: mem, subs: l.subs, boot: boot, dirty: l.state.State != Clean}
}

func corrupt(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, a...)...)
}

// load checks the image mem of a file on a machine with boot id boot (0:
// none) and says how it was left. For a Consistent file whose last
// operation was cut short, it undoes that operation in mem; it changes
// nothing else, and nothing on error or for Rebuild. Every length is
// checked before it is used.
func load(mem []byte, boot uint64) (loaded, error) {
	var l loaded
	if len(mem) < headerSize {
		return l, corrupt("%d bytes is shorter than the %d-byte header", len(mem), headerSize)
	}
	if string(mem[:4]) != magic {
		return l, corrupt("not a scaling counting bloom filter: magic %q, want %q", mem[:4], magic)
	}
	if mem[4] != version {
		return l, fmt.Errorf("%w: format version %d, this build reads version %d", ErrVersion, mem[4], version)
	}
	if got, want := get(mem, offParamSum), xxh3.Hash(mem[:offParamSum]); got != want {
		return l, corrupt("header checksum %016x, want %016x: the parameters are damaged", got, want)
	}
	o := Options{
		Capacity:  get(mem, offCapacity),
		ErrorRate: math.Float64frombits(get(mem, offRate)),
		Ratio:     math.Float64frombits(get(mem, offRatio)),
		Seed:      get(mem, offSeed),
	}
	if mem[5] != counterWidth || mem[6] != 0 || mem[7] != 0 {
		return l, corrupt("%d-bit counters (reserved %d, %d): this format has %d-bit counters", mem[5], mem[6], mem[7], counterWidth)
	}
	if o.ErrorRate == 0 || o.Ratio == 0 {
		return l, corrupt("error rate %v, ratio %v: a file states both", o.ErrorRate, o.Ratio)
	}
	if err := o.Validate(); err != nil {
		return l, corrupt("parameters: %v", err)
	}
	l.opts = o

	dirty, seq, flushed := get(mem, offDirty), get(mem, offSeq), get(mem, offCleanSeq)
	switch {
	case dirty > 1:
		return l, corrupt("dirty marker %d is neither 0 nor 1", dirty)
	case flushed > seq:
		return l, corrupt("last flush at operation %d, after the last operation %d", flushed, seq)
	case dirty == 1 && (boot == 0 || get(mem, offBoot) != boot):
		l.state = OpenState{State: Rebuild, Seq: flushed, Flushed: flushed, BootChanged: boot != 0}
		return l, nil
	}

	n := get(mem, offFilters)
	if n < 1 || n > MaxFilters {
		return l, corrupt("%d sub-filters, want 1 to %d", n, MaxFilters)
	}
	if n*(subHeader+8) > uint64(len(mem)-headerSize) {
		return l, corrupt("%d sub-filters cannot fit in %d bytes", n, len(mem))
	}
	l.subs = make([]sub, n)
	off := headerSize
	for i := range l.subs {
		if len(mem)-off < subHeader {
			return l, corrupt("sub-filter %d at byte %d is past the end of the %d-byte file", i, off, len(mem))
		}
		id, k, cpf := get(mem, off+subID), get(mem, off+subK), get(mem, off+subCPF)
		if k < 1 || k > MaxHashes {
			return l, corrupt("sub-filter %d has %d hashes, want 1 to %d", i, k, MaxHashes)
		}
		if cpf < 1 || cpf > maxCounters/k {
			return l, corrupt("sub-filter %d has %d counters per hash, want 1 to %d", i, cpf, maxCounters/k)
		}
		size := counterBytes(int(k), cpf)
		if size > uint64(len(mem)-off-subHeader) {
			return l, corrupt("sub-filter %d needs %d bytes of counters, %d are left", i, size, len(mem)-off-subHeader)
		}
		if i == 0 && id != 0 {
			return l, corrupt("sub-filter 0 starts at id %d, not 0", id)
		}
		if i > 0 && id <= get(mem, l.subs[i-1].off+subID) {
			return l, corrupt("sub-filter %d starts at id %d, not after sub-filter %d's %d", i, id, i-1, get(mem, l.subs[i-1].off+subID))
		}
		l.subs[i] = sub{off: off, k: int(k), cpf: cpf}
		off += subHeader + int(size)
	}
	l.end = off
	// The largest id is at least the newest sub-filter's first, except
	// inside an Add that is adding a sub-filter (undo checks that one).
	if maxID, first := get(mem, offMaxID), get(mem, l.subs[n-1].off+subID); maxID < first && (dirty == 0 || get(mem, offIntentSeq) != seq+1) {
		return l, corrupt("largest id %d is below the newest sub-filter's first id %d", maxID, first)
	}
	if dirty == 0 {
		switch {
		case l.end != len(mem):
			return l, corrupt("the sub-filters take %d bytes of the %d-byte file", l.end, len(mem))
		case seq != flushed:
			return l, corrupt("clean file at operation %d, flushed at %d", seq, flushed)
		}
		if got, want := get(mem, offCleanSum), cleanSum(mem); got != want {
			return l, corrupt("checksum %016x, want %016x: the counters or the state are damaged", got, want)
		}
		l.state = OpenState{State: Clean, Seq: seq, Flushed: flushed}
		return l, nil
	}
	l.state = OpenState{State: Consistent, Seq: seq, Flushed: flushed}
	if get(mem, offIntentSeq) == seq+1 {
		return undo(mem, l)
	}
	return l, nil
}

// undo restores what the operation recorded in mem's intent changed: the
// file then holds operations 1..seq.
func undo(mem []byte, l loaded) (loaded, error) {
	op, key, t := get(mem, offIntentOp), get(mem, offIntentKey), get(mem, offIntentSub)
	was, maxID := get(mem, offIntentFilters), get(mem, offIntentMaxID)
	n := uint64(len(l.subs))
	switch {
	case op != opAdd && op != opRemove:
		return l, corrupt("operation %d in flight is of kind %d, neither add nor remove", l.state.Seq+1, op)
	case was < 1 || was > n || n-was > 1:
		return l, corrupt("operation %d in flight began with %d sub-filters, the file has %d", l.state.Seq+1, was, n)
	case t > was || (t == was && op != opAdd):
		return l, corrupt("operation %d in flight names sub-filter %d of %d", l.state.Seq+1, t, was)
	case maxID < get(mem, l.subs[was-1].off+subID):
		return l, corrupt("operation %d in flight began with largest id %d, below sub-filter %d's first id", l.state.Seq+1, maxID, was-1)
	}
	if t < was {
		s := &l.subs[t]
		h := hashmix.Mix(key ^ l.opts.Seed)
		c, old := s.counters(mem), mem[offIntentNibbles:intentEnd]
		for j := range s.k {
			setNibble(c, s.index(h, j), nibble(old, uint64(j)))
		}
		put(mem, s.off+subCount, get(mem, offIntentCount))
	}
	put(mem, offMaxID, maxID)
	put(mem, offSats, get(mem, offIntentSats))
	store(mem, offFilters, was)
	store(mem, offIntentSeq, 0)
	l.subs = l.subs[:was]
	if was < n {
		l.end = l.subs[was-1].off + subHeader + int(counterBytes(l.subs[was-1].k, l.subs[was-1].cpf))
	}
	l.state.Undone = map[uint64]string{opAdd: "add", opRemove: "remove"}[op]
	return l, nil
}
