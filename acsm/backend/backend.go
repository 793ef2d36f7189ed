// Package backend is the leaf every ACSM store implements: the Backend
// interface, its three-valued answer, its counters and its errors. The
// stores (acsm's kbf adapter and exact map, acsm/sbf, acsm/fcf) import it
// and nothing else of the ACSM, and the ACSM picks one by constructor, so
// a new store plugs in without touching the others.
//
// kbf, a general key-value filter that knows nothing of the ACSM, keeps
// its own answer type; acsm's adapter maps it onto Result.
package backend

import (
	"errors"
	"fmt"
)

// Result is a store's answer to a lookup.
type Result uint8

// Lookup results.
const (
	Absent  Result = iota // no state stored for the key
	Found                 // a value was decoded
	Unknown               // the key seems present but its value cannot be told ("don't know")
)

func (r Result) String() string {
	switch r {
	case Absent:
		return "absent"
	case Found:
		return "found"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("Result(%d)", uint8(r))
}

// Sentinel errors.
var (
	// ErrFull reports an insert into a store with no room left (the exact
	// map past its cap, an fcf bucket set with no free cell).
	ErrFull = errors.New("acsm: backend full")
	// ErrNotFound reports an update or delete of a key a store does not
	// hold (or holds with another value).
	ErrNotFound = errors.New("acsm: key not found")
)

// Backend stores one small value (0..Values-1) per flow hash. Backends are
// not safe for concurrent use. None allocates on Insert, Query, Update or
// Delete except the exact map, which grows up to its cap.
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
	Stats() Stats
}

// Stats are a backend's own counters (the JSON names are those of the
// replay summary's acsm.backend_counters).
type Stats struct {
	Inserts        uint64 `json:"inserts"`         // successful inserts
	InsertFailures uint64 `json:"insert_failures"` // inserts refused (full)
	Updates        uint64 `json:"updates"`
	Deletes        uint64 `json:"deletes"`
	DontKnow       uint64 `json:"dont_know"`       // queries answered Unknown
	DecodeFailures uint64 `json:"decode_failures"` // updates/deletes refused because the stored value did not match
	Expired        uint64 `json:"expired"`         // flows dropped by aging (filled in by the tracker)
	// Shed counts live flows of the shed tier evicted to make room for a
	// new flow when the table was full (dleft with Shed): overload.
	Shed uint64 `json:"shed"`
}

// Add adds o's counters to s (backends of several generations or shards).
func (s *Stats) Add(o Stats) {
	s.Inserts += o.Inserts
	s.InsertFailures += o.InsertFailures
	s.Updates += o.Updates
	s.Deletes += o.Deletes
	s.DontKnow += o.DontKnow
	s.DecodeFailures += o.DecodeFailures
	s.Expired += o.Expired
	s.Shed += o.Shed
}
