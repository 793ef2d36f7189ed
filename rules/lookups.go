package rules

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
)

// Lookups is what watchlist rules ask about a new flow's hosts: the
// agent's watchlists, which live outside the rules (pipeline/watchlist)
// and are shared by the shards. Answers are approximate in a Bloom
// filter's way: a false positive now and then, never a false negative.
type Lookups interface {
	// Lists names the watchlists there are, sorted.
	Lists() []string
	// Listed reports whether a is on the watchlist named list.
	Listed(list string, a netip.Addr) bool
}

// SetNovelty gives the shard what novelty rules ask: whether the new
// flow being processed is between hosts the flow history had not seen
// together within its horizon. The pipeline's history stage records
// every new flow's pair before the consumers run and answers for that
// flow (asking the history again would find the pair just recorded).
func (s *Shard) SetNovelty(novel func() bool) { s.novel = novel }

// SetLookups gives the engine what watchlist rules ask; a
// rule naming a watchlist l does not have is an error, and so is, on a
// reload, a new rules file with one (the old rules stay).
func (e *Engine) SetLookups(l Lookups) error {
	if err := checkLists(e.set.Load(), l); err != nil {
		return err
	}
	e.lookups.Store(&lookupsBox{l})
	return nil
}

type lookupsBox struct{ Lookups }

// checkLists says which rules of s name a watchlist l does not have.
func checkLists(s *Set, l Lookups) error {
	if s == nil {
		return nil
	}
	var names []string // sorted (Lookups.Lists)
	if l != nil {
		names = l.Lists()
	}
	var errs []error
	for _, r := range s.rules {
		if _, found := slices.BinarySearch(names, r.Watchlist.List); r.Kind == KindWatchlist && !found {
			errs = append(errs, fmt.Errorf("%d:%d: rule %q: no watchlist %q (the agent has %v)",
				r.Pos.Line, r.Pos.Col, r.Alert, r.Watchlist.List, names))
		}
	}
	return errors.Join(errs...)
}

// lookup runs the watchlist and novelty rules on a new flow's packet.
func (s *Shard) lookup(set *Set, x *packetCtx) {
	var l Lookups
	if box := s.eng.lookups.Load(); box != nil {
		l = box.Lookups
	}
	o := x.origin()
	for _, r := range set.onLookup {
		if !r.Match.matches(x) {
			continue
		}
		switch r.Kind {
		case KindWatchlist:
			w := &r.Watchlist
			if l != nil && ((w.Side != DstSide && l.Listed(w.List, o.Src)) || (w.Side != SrcSide && l.Listed(w.List, o.Dst))) {
				s.fire(r, x, x.key(r.Track), 0)
			}
		case KindNovelty:
			if s.novel != nil && s.novel() {
				s.fire(r, x, x.key(r.Track), 0)
			}
		}
	}
}
