package flowcount

import (
	"fmt"
	"sort"

	"github.com/flowmon/flowmon/filters/ccf"
)

// SideOptions returns the CCF options of a diff side: growth allowed (a
// capture's flow count is unknown up front) and a 1e-6 false-positive
// target, so that a wrong verdict is rare.
func SideOptions() ccf.Options {
	return ccf.Options{Capacity: 1 << 16, FPRate: 1e-6, CounterBits: 32, MaxLevels: 10}
}

// Side is one vantage point of a diff: a CCF of packets per flow and an
// exact hash -> key map used only to name flows.
type Side[K comparable] struct {
	Filter  *ccf.Filter
	Names   map[uint64]K
	Packets uint64
	Dropped uint64 // packets refused by a full filter
}

// NewSide returns an empty side with a filter built from o.
func NewSide[K comparable](o ccf.Options) (*Side[K], error) {
	f, err := ccf.New(o)
	if err != nil {
		return nil, fmt.Errorf("new diff side: %w", err)
	}
	return &Side[K]{Filter: f, Names: map[uint64]K{}}, nil
}

// NewSideLike returns an empty side whose filter has peer's shape, so
// that DiffPeer can decode against it.
func NewSideLike[K comparable](peer *ccf.Filter) *Side[K] {
	return &Side[K]{Filter: ccf.NewLike(peer), Names: map[uint64]K{}}
}

// Add counts one packet of flow key with hash h.
func (s *Side[K]) Add(key K, h uint64) {
	s.Packets++
	if _, err := s.Filter.Insert(h, 1); err != nil {
		s.Dropped++
		return
	}
	if _, ok := s.Names[h]; !ok {
		s.Names[h] = key
	}
}

// Entry is one flow whose packet counts differ.
type Entry[K comparable] struct {
	Key         K
	Hash        uint64
	Here, There uint64
	Verdict     Verdict
}

// Report is a diff's result: the differing flows, largest difference
// first, and totals.
type Report[K comparable] struct {
	Entries []Entry[K]

	HereFlows, ThereFlows     uint64
	HerePackets, TherePackets uint64

	OnlyHere, OnlyThere, Differ uint64 // flows per class
	// Missing counts packets seen here and not there (Σ here-there over
	// flows with more here); Extra the reverse.
	Missing, Extra uint64
	// UnnamedOnlyThere counts flows (and their packets) present only in
	// the peer's filter, found by decoding: DiffPeer only.
	UnnamedOnlyThere, UnnamedOnlyTherePackets uint64
}

func (r *Report[K]) add(e Entry[K]) {
	e.Verdict = verdict(e.Here, e.There)
	switch e.Verdict {
	case OnlyHere:
		r.OnlyHere++
	case OnlyThere:
		r.OnlyThere++
	default:
		r.Differ++
	}
	if e.Here > e.There {
		r.Missing += e.Here - e.There
	} else {
		r.Extra += e.There - e.Here
	}
	r.Entries = append(r.Entries, e)
}

func (r *Report[K]) sort() {
	sort.Slice(r.Entries, func(i, j int) bool {
		a, b := r.Entries[i], r.Entries[j]
		da, db := absDiff(a.Here, a.There), absDiff(b.Here, b.There)
		if da != db {
			return da > db
		}
		return a.Hash < b.Hash
	})
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}

// Diff compares two sides whose flows both have names: every flow of each
// side is looked up in the other side's filter (Algorithm 4, both ways).
func Diff[K comparable](here, there *Side[K]) *Report[K] {
	r := &Report[K]{
		HereFlows: uint64(len(here.Names)), ThereFlows: uint64(len(there.Names)),
		HerePackets: here.Packets, TherePackets: there.Packets,
	}
	for h, k := range here.Names {
		mine := here.Filter.Count(h)
		if c, theirs := ccf.Query(there.Filter, h, mine); c != ccf.Same {
			r.add(Entry[K]{Key: k, Hash: h, Here: mine, There: theirs})
		}
	}
	for h, k := range there.Names {
		if _, ok := here.Names[h]; ok {
			continue // judged from here already
		}
		theirs := there.Filter.Count(h)
		if c, mine := ccf.Query(here.Filter, h, theirs); c != ccf.Same {
			r.add(Entry[K]{Key: k, Hash: h, Here: mine, There: theirs})
		}
	}
	r.sort()
	return r
}

// Verdict says how a flow's packet counts compare, seen from here.
type Verdict uint8

const (
	OnlyHere  Verdict = iota + 1 // seen here, not there
	OnlyThere                    // seen there, not here
	MoreHere                     // both, more packets here (loss after here)
	MoreThere                    // both, more packets there
)

func (v Verdict) String() string {
	switch v {
	case OnlyHere:
		return "only-here"
	case OnlyThere:
		return "only-there"
	case MoreHere:
		return "more-here"
	case MoreThere:
		return "more-there"
	}
	return fmt.Sprintf("verdict(%d)", uint8(v))
}

func verdict(here, there uint64) Verdict {
	switch {
	case there == 0:
		return OnlyHere
	case here == 0:
		return OnlyThere
	case here > there:
		return MoreHere
	}
	return MoreThere
}

// DiffPeer compares a named side with a peer's filter (same shape, see
// NewSideLike): here's flows are looked up in the peer's filter, and the
// peer's flows absent here are counted by decoding, without names.
func DiffPeer[K comparable](here *Side[K], peer *ccf.Filter) (*Report[K], error) {
	d, err := ccf.Decode(here.Filter, peer)
	if err != nil {
		return nil, fmt.Errorf("diff against peer: %w", err)
	}
	st := peer.Stats()
	r := &Report[K]{
		HereFlows: uint64(len(here.Names)), ThereFlows: st.Distinct,
		HerePackets: here.Packets, TherePackets: st.Total,
		UnnamedOnlyThere: d.OnlyThere, UnnamedOnlyTherePackets: d.OnlyThereTotal,
	}
	for h, k := range here.Names {
		mine := here.Filter.Count(h)
		if c, theirs := ccf.Query(peer, h, mine); c != ccf.Same {
			r.add(Entry[K]{Key: k, Hash: h, Here: mine, There: theirs})
		}
	}
	r.OnlyThere += d.OnlyThere
	r.Extra += d.OnlyThereTotal
	r.sort()
	return r, nil
}
