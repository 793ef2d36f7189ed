package acsm

import (
	"errors"
	"fmt"
)

// Sentinel errors.
var (
	// ErrConfig reports a Config that Validate rejects.
	ErrConfig = errors.New("acsm: invalid config")
	// ErrFull reports an insert into a backend with no room left (the exact
	// backend past its cap, an fcf bucket set with no free cell).
	ErrFull = errors.New("acsm: backend full")
	// ErrNotFound reports an update or delete of a key a backend does not hold.
	ErrNotFound = errors.New("acsm: key not found")
	// ErrUnknownConnState reports a conn_state name Zeek does not use.
	ErrUnknownConnState = errors.New("acsm: unknown conn_state")
)

// Backend stores one small value (0..Values-1) per flow hash. The four
// implementations are Exact (a map), kbf's key-value Bloom filter, and
// Bonomi et al.'s stateful Bloom filter (acsm/sbf) and
// fingerprint-compressed filter (acsm/fcf). Backends are not safe for
// concurrent use. None allocates on Insert, Query, Update or Delete except
// Exact, which grows its map up to its cap.
type Backend interface {
	Insert(h uint64, v uint32) error
	Query(h uint64) (uint32, Result)
	Update(h uint64, old, new uint32) error
	Delete(h uint64, v uint32) error
	// Prefetch starts loading the memory an operation on h reads and
	// returns at once (a hint: a backend may do nothing).
	Prefetch(h uint64)
	// Reset empties the backend, keeping its memory.
	Reset()
	MemoryBytes() int
	Stats() BackendStats
}

// BackendStats are a backend's own counters (the JSON names are those of
// the replay summary's acsm.backend_counters).
type BackendStats struct {
	Inserts        uint64 `json:"inserts"`         // successful inserts
	InsertFailures uint64 `json:"insert_failures"` // inserts refused (full)
	Updates        uint64 `json:"updates"`
	Deletes        uint64 `json:"deletes"`
	DontKnow       uint64 `json:"dont_know"`       // queries answered Unknown
	DecodeFailures uint64 `json:"decode_failures"` // updates/deletes refused because the stored value did not match
	Expired        uint64 `json:"expired"`         // flows dropped by aging (filled in by the tracker)
}

// Add adds o's counters to s (backends of several generations or shards).
func (s *BackendStats) Add(o BackendStats) {
	s.Inserts += o.Inserts
	s.InsertFailures += o.InsertFailures
	s.Updates += o.Updates
	s.Deletes += o.Deletes
	s.DontKnow += o.DontKnow
	s.DecodeFailures += o.DecodeFailures
	s.Expired += o.Expired
}

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
