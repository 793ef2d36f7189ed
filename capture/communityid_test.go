package capture

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
)

// TestCommunityIDBaselines checks every tuple of the spec's published
// baselines (testdata/communityid: corelight/community-id-spec's
// baseline/*.json, BSD-3-Clause) for the default seed, seed 1 and the hex
// form. Their ICMP tuples give the type and the counterpart type (or the
// code), as flowmon's keys hold them.
func TestCommunityIDBaselines(t *testing.T) {
	for _, c := range []struct {
		file string
		seed uint16
		hex  bool
	}{{"baseline_deflt.json", 0, false}, {"baseline_seed1.json", 1, false}, {"baseline_nob64.json", 0, true}} {
		raw, err := os.ReadFile(filepath.Join("testdata", "communityid", c.file))
		if err != nil {
			t.Fatal(err)
		}
		var vs []struct {
			Proto        uint8
			Saddr, Daddr netip.Addr
			Sport, Dport *uint16
			CommunityID  string `json:"communityid"`
		}
		if err := json.Unmarshal(raw, &vs); err != nil {
			t.Fatal(err)
		}
		if len(vs) < 20 {
			t.Fatalf("%s: %d vectors", c.file, len(vs))
		}
		for _, v := range vs {
			k := Key{Src: v.Saddr, Dst: v.Daddr, Proto: v.Proto}
			if v.Sport != nil {
				k.SrcPort, k.DstPort = *v.Sport, *v.Dport
			}
			if got := string(AppendCommunityID(nil, &k, c.seed, c.hex)); got != v.CommunityID {
				t.Errorf("%s: %v: %s, want %s", c.file, k, got, v.CommunityID)
			}
			// IPv4-mapped addresses give the IPv4 ID.
			m := k
			m.Src, m.Dst = netip.AddrFrom16(k.Src.As16()), netip.AddrFrom16(k.Dst.As16())
			if got := string(AppendCommunityID(nil, &m, c.seed, c.hex)); got != v.CommunityID {
				t.Errorf("%s: %v mapped: %s, want %s", c.file, m, got, v.CommunityID)
			}
		}
		t.Logf("%s: %d vectors", c.file, len(vs))
	}
}

// TestCommunityIDDirection: a flow with a counterpart has one ID both ways;
// a one-way ICMP message keeps its direction.
func TestCommunityIDDirection(t *testing.T) {
	a, b := netip.MustParseAddr("192.168.0.1"), netip.MustParseAddr("10.0.0.5")
	for _, c := range []struct {
		k       Key
		sameRev bool
	}{
		{Key{Src: a, Dst: b, SrcPort: 12345, DstPort: 80, Proto: ProtoTCP}, true},
		{Key{Src: a, Dst: b, SrcPort: 8, DstPort: 0, Proto: ProtoICMP}, true},  // echo
		{Key{Src: a, Dst: b, SrcPort: 3, DstPort: 1, Proto: ProtoICMP}, false}, // unreachable
		{Key{Src: a, Dst: b, Proto: 47}, true},
	} {
		r := c.k.Reverse()
		if c.k.Proto == ProtoICMP && !c.sameRev {
			r.SrcPort, r.DstPort = c.k.SrcPort, c.k.DstPort // the same message, the other way
		}
		if same := CommunityID(&c.k, 0) == CommunityID(&r, 0); same != c.sameRev {
			t.Errorf("%v: same ID reversed %v, want %v", c.k, same, c.sameRev)
		}
	}
	k := Key{Src: a, Dst: b, SrcPort: 12345, DstPort: 80, Proto: ProtoTCP}
	var buf [64]byte
	if n := testing.AllocsPerRun(100, func() { AppendCommunityID(buf[:0], &k, 0, false) }); n != 0 {
		t.Errorf("AppendCommunityID: %v allocations", n)
	}
}
