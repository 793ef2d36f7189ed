package acsm

import (
	"errors"
	"fmt"

	"github.com/flowmon/flowmon/acsm/backend"
)

// Sentinel errors.
var (
	// ErrConfig reports a Config that Validate rejects.
	ErrConfig = errors.New("acsm: invalid config")
	// ErrFull and ErrNotFound are the stores' (acsm/backend).
	ErrFull     = backend.ErrFull
	ErrNotFound = backend.ErrNotFound
	// ErrUnknownConnState reports a conn_state name Zeek does not use.
	ErrUnknownConnState = errors.New("acsm: unknown conn_state")
)

// Backend is a store of one small value per flow hash; the interface, its
// answer and its counters live in the leaf package acsm/backend, which
// every store implements. The five stores are Exact (a map), kbf's
// key-value Bloom filter (adapted in backends.go), Bonomi et al.'s
// stateful Bloom filter (acsm/sbf) and fingerprint-compressed filter
// (acsm/fcf), and acsm/dleft, a d-left fingerprint table that ages its
// own cells (the tracker then keeps one table instead of the rings).
type Backend = backend.Backend

// BackendStats are a backend's counters (acsm/backend).
type BackendStats = backend.Stats

// Exact is the ground-truth backend: a map from flow hash to value, with a
// hard cap on its size. It is exact up to 64-bit hash collisions. It is not
// safe for concurrent use.
type Exact struct {
	m     map[uint64]uint32
	max   int
	peak  int // most flows held at once: maps do not shrink
	stats BackendStats
}

// exactEntryBytes is the estimated map cost per entry: a 16-byte slot (key,
// value, padding), the swiss table's control byte, and its 7/8 load.
const exactEntryBytes = 20

// NewExact returns an exact backend holding at most max flows; hint
// presizes the map.
func NewExact(max, hint int) (*Exact, error) {
	if max < 1 {
		return nil, fmt.Errorf("new exact backend: cap %d must be >= 1: %w", max, ErrConfig)
	}
	if hint > max {
		hint = max
	}
	return &Exact{m: make(map[uint64]uint32, hint), max: max}, nil
}

// Insert stores v for h, replacing any value already there.
func (e *Exact) Insert(h uint64, v uint32) error {
	if _, ok := e.m[h]; !ok && len(e.m) >= e.max {
		e.stats.InsertFailures++
		return ErrFull
	}
	e.m[h] = v
	e.peak = max(e.peak, len(e.m))
	e.stats.Inserts++
	return nil
}

// Query returns h's value.
func (e *Exact) Query(h uint64) (uint32, Result) {
	v, ok := e.m[h]
	if !ok {
		return 0, Absent
	}
	return v, Found
}

// Update sets h's value from old to new.
func (e *Exact) Update(h uint64, old, new uint32) error {
	if v, ok := e.m[h]; !ok || v != old {
		e.stats.DecodeFailures++
		return ErrNotFound
	}
	e.m[h] = new
	e.stats.Updates++
	return nil
}

// Delete removes h.
func (e *Exact) Delete(h uint64, v uint32) error {
	if x, ok := e.m[h]; !ok || x != v {
		e.stats.DecodeFailures++
		return ErrNotFound
	}
	delete(e.m, h)
	e.stats.Deletes++
	return nil
}

// Reset empties the map, keeping its buckets.
func (e *Exact) Reset() { clear(e.m) }

// Len is the number of flows held.
func (e *Exact) Len() int { return len(e.m) }

// Range calls fn for every stored flow until fn returns false.
func (e *Exact) Range(fn func(h uint64, v uint32) bool) {
	for h, v := range e.m {
		if !fn(h, v) {
			return
		}
	}
}

// MemoryBytes estimates the map's size from the most flows it has held.
func (e *Exact) MemoryBytes() int { return e.peak * exactEntryBytes }

// Prefetch does nothing: a map's memory is not the backends' question.
func (e *Exact) Prefetch(h uint64) {}

// Stats returns the counters.
func (e *Exact) Stats() BackendStats { return e.stats }
