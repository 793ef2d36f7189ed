package rules

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/flowmon/flowmon/conferr"
)

// Watchlists are what watchlist rules ask about a new flow's hosts: the
// agent's watchlists, which live outside the rules (pipeline/watchlist)
// and are shared by the shards. Answers are approximate in a Bloom
// filter's way: a false positive now and then, never a false negative.
type Watchlists interface {
	// Lists names the watchlists there are, sorted.
	Lists() []string
	// Listed reports whether a is on the watchlist named list.
	Listed(list string, a netip.Addr) bool
}

// Lookups are what a Shard's watchlist and novelty rules ask beside the
// packets, given once, to NewShard.
type Lookups struct {
	// Watchlists answers watchlist rules; nil for none. The lists are
	// shared: every shard of an engine is given the same.
	Watchlists Watchlists
	// Novel answers novelty rules: whether the new flow being processed
	// is between hosts the flow history had not seen together within its
	// horizon. The pipeline's host-pair stage records every new flow's
	// pair before the shard runs and answers for that flow (asking the
	// history again would find the pair just recorded). nil without a
	// history: novelty rules never fire.
	Novel func() bool
}

// CheckWatchlists says which rules in effect name a watchlist l does not
// have (the error lists them with their positions); nil l has none.
func (e *Engine) CheckWatchlists(l Watchlists) error {
	return e.set.Load().CheckWatchlists(l)
}

// CheckWatchlists says which rules of s name a watchlist l does not
// have (the error lists them with their positions); nil l has none.
func (s *Set) CheckWatchlists(l Watchlists) error {
	if s == nil {
		return nil
	}
	var names []string // sorted (Watchlists.Lists)
	if l != nil {
		names = l.Lists()
	}
	var errs []*conferr.Error
	for _, r := range s.rules {
		if _, found := slices.BinarySearch(names, r.Watchlist.List); r.Kind == KindWatchlist && !found {
			errs = append(errs, &conferr.Error{File: r.file, Line: r.Pos.Line, Col: r.Pos.Col, In: ruleIn(r.Alert),
				Msg: fmt.Sprintf("no watchlist %q (the agent has %v)", r.Watchlist.List, names), Err: ErrInvalid})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return conferr.Errors(errs) // in the rules' order, which is their files'
}

// lookup runs the watchlist and novelty rules on a new flow's packet.
func (s *Shard) lookup(set *Set, x *packetCtx) {
	l := s.lk.Watchlists
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
			if x.flow && x.novel || !x.flow && s.lk.Novel != nil && s.lk.Novel() {
				s.fire(r, x, x.key(r.Track), 0)
			}
		}
	}
}
