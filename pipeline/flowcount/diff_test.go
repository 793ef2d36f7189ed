package flowcount

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/flowmon/flowmon/filters/ccf"
)

// twoVantages returns two packet streams of the same flows: some flows
// seen on one side only, some losing packets on the way to B.
func twoVantages() (a, b map[string]uint64) {
	r := rand.New(rand.NewPCG(3, 4))
	a, b = map[string]uint64{}, map[string]uint64{}
	for i := range 2000 {
		k := fmt.Sprintf("flow-%d", i)
		n := 1 + r.Uint64N(50)
		switch i % 20 {
		case 0:
			a[k] = n
		case 1:
			b[k] = n
		case 2:
			a[k], b[k] = n+3, n
		case 3:
			a[k], b[k] = n, n+1
		default:
			a[k], b[k] = n, n
		}
	}
	return a, b
}

func hashOf(k string) uint64 { return ccf.Options{}.Seed ^ fnv(k) }

func fnv(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

func feed(t *testing.T, s *Side[string], ms map[string]uint64) {
	for k, n := range ms {
		for range n {
			s.Add(k, hashOf(k))
		}
	}
}

func checkReport(t *testing.T, r *Report[string], a, b map[string]uint64, named bool) {
	t.Helper()
	want := map[string]Verdict{}
	for k, n := range a {
		if b[k] != n {
			want[k] = verdict(n, b[k])
		}
	}
	if named {
		for k, n := range b {
			if a[k] == 0 {
				want[k] = verdict(0, n)
			}
		}
	}
	got := map[string]Verdict{}
	for _, e := range r.Entries {
		got[e.Key] = e.Verdict
		if e.Here != a[e.Key] || e.There != b[e.Key] {
			t.Errorf("%s: counts %d/%d want %d/%d", e.Key, e.Here, e.There, a[e.Key], b[e.Key])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d entries, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %v want %v", k, got[k], v)
		}
	}
	for i := 1; i < len(r.Entries); i++ {
		if absDiff(r.Entries[i].Here, r.Entries[i].There) > absDiff(r.Entries[i-1].Here, r.Entries[i-1].There) {
			t.Fatal("entries not sorted by difference")
		}
	}
}

func TestDiff(t *testing.T) {
	a, b := twoVantages()
	sa, _ := NewSide[string](SideOptions())
	sb, _ := NewSide[string](SideOptions())
	feed(t, sa, a)
	feed(t, sb, b)
	r := Diff(sa, sb)
	checkReport(t, r, a, b, true)
	if r.OnlyHere != 100 || r.OnlyThere != 100 || r.Differ != 200 || r.HereFlows != 1900 || r.ThereFlows != 1900 {
		t.Errorf("totals %+v", *r)
	}
	if r.Missing-r.Extra != sa.Packets-sb.Packets {
		t.Errorf("missing %d extra %d, packets %d/%d", r.Missing, r.Extra, sa.Packets, sb.Packets)
	}
}

func TestDiffPeer(t *testing.T) {
	a, b := twoVantages()
	peer, err := NewSide[string](ccf.Options{Capacity: 4000, FPRate: 1e-6, CounterBits: 32})
	if err != nil {
		t.Fatal(err)
	}
	feed(t, peer, b)
	sa := NewSideLike[string](peer.Filter)
	feed(t, sa, a)
	r, err := DiffPeer(sa, peer.Filter)
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, r, a, b, false)
	var onlyB, onlyBPackets uint64
	for k, n := range b {
		if a[k] == 0 {
			onlyB++
			onlyBPackets += n
		}
	}
	if r.UnnamedOnlyThere != onlyB || r.UnnamedOnlyTherePackets != onlyBPackets || r.TherePackets != peer.Packets {
		t.Errorf("unnamed only-there %d/%d want %d/%d", r.UnnamedOnlyThere, r.UnnamedOnlyTherePackets, onlyB, onlyBPackets)
	}
	other, _ := NewSide[string](ccf.Options{Capacity: 100})
	if _, err := DiffPeer(other, peer.Filter); !errors.Is(err, ccf.ErrIncompatible) {
		t.Errorf("different shapes: %v", err)
	}
}
