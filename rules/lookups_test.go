package rules

import (
	"maps"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
)

// fakeLists is an exact watchlist set.
type fakeLists map[string][]netip.Prefix

func (f fakeLists) Lists() []string { return slices.Sorted(maps.Keys(f)) }

func (f fakeLists) Listed(list string, a netip.Addr) bool {
	for _, p := range f[list] {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

const lookupRules = `
groups:
  - name: g
    rules:
      - alert: ToBlocklisted
        kind: watchlist
        track: by_dst
        watchlist: {list: blocklist, side: dst}
      - alert: FromScanner
        kind: watchlist
        track: by_src
        watchlist: {list: scanners}
      - alert: NewPair
        kind: novelty
        track: by_pair
        match: {dst: [198.18.0.0/16]}
        novelty: {}
`

// TestWatchlistAndNoveltyRules: a new flow to a listed destination, or
// from a listed source, raises the rule's alert once per key; a flow the
// history calls novel raises the novelty rule within its match only; the
// later packets of a flow ask nothing.
func TestWatchlistAndNoveltyRules(t *testing.T) {
	lists := fakeLists{
		"blocklist": {netip.MustParsePrefix("192.0.2.0/24")},
		"scanners":  {netip.MustParsePrefix("203.0.113.7/32")},
	}
	seen := map[string]bool{}
	var asked int
	var r *rig
	r = newRig(t, lookupRules, Lookups{Watchlists: lists, Novel: func() bool {
		asked++
		o := r.ev.Originator()
		k := o.Src.String() + ">" + o.Dst.String()
		novel := !seen[k]
		seen[k] = true
		return novel
	}})
	at := time.Duration(0)
	flow := func(src string, sp uint16, dst string) {
		for _, f := range []capture.TCPFlags{capture.SYN, capture.ACK, capture.ACK} {
			r.packet(src, sp, dst, 443, f, at, 60)
			at += time.Millisecond
		}
	}
	flow("10.0.0.1", 1000, "192.0.2.9")     // to the blocklist; a new pair, but outside 198.18/16
	flow("10.0.0.1", 1001, "192.0.2.9")     // again: folds into the firing alert
	flow("203.0.113.7", 1002, "198.18.0.1") // from a scanner; a new pair
	flow("203.0.113.7", 1003, "198.18.0.1") // the same pair: not novel
	flow("10.0.0.2", 1004, "198.18.0.2")    // a new pair, nothing listed
	r.finish()
	for name, want := range map[string]int{"ToBlocklisted": 1, "FromScanner": 1, "NewPair": 2} {
		if got := r.rec.firing(name); len(got) != want {
			t.Errorf("%s: %d alerts, want %d: %v", name, len(got), want, got)
		}
	}
	if asked != 3 {
		t.Errorf("the history was asked %d times, want once per new flow the novelty rule matches (3)", asked)
	}
	bl := r.rec.firing("ToBlocklisted")
	if len(bl) == 1 && (bl[0].Labels.Get("dst") != "192.0.2.9" || bl[0].Flow.DstPort != 443) {
		t.Errorf("ToBlocklisted: %+v", bl[0])
	}
}

// TestWatchlistRuleNeedsItsList: a rule naming a watchlist the agent
// does not have is refused by CheckWatchlists and NewShard, and a reload
// bringing one keeps the old rules.
func TestWatchlistRuleNeedsItsList(t *testing.T) {
	r := newRig(t, lookupRules, Lookups{Watchlists: fakeLists{"blocklist": nil, "scanners": nil}})
	const want = `rule "FromScanner": no watchlist "scanners" (the agent has [blocklist])`
	if err := r.eng.CheckWatchlists(fakeLists{"blocklist": nil}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("CheckWatchlists without scanners: %v", err)
	}
	if _, err := r.eng.NewShard(Lookups{Watchlists: fakeLists{"blocklist": nil}}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("NewShard without scanners: %v", err)
	}
	path := t.TempDir() + "/r.yaml"
	writeFile(t, path, strings.Replace(lookupRules, "list: scanners", "list: others", 1))
	if err := r.eng.Reload(path); err == nil || !strings.Contains(err.Error(), `no watchlist "others"`) {
		t.Errorf("reload naming an unknown list: %v", err)
	}
	if r.eng.Set().Len() != 3 {
		t.Errorf("the old rules did not stay")
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
