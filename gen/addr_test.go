package gen

import (
	"net/netip"
	"testing"
)

func addrOf(b []byte) netip.Addr {
	a, _ := netip.AddrFromSlice(b)
	return a.Unmap()
}

func TestPerm24IsBijective(t *testing.T) {
	seen := make([]bool, 1<<24)
	for x := uint32(0); x < 1<<24; x++ {
		y := perm24(x, 0x123456)
		if y > mask24 || seen[y] {
			t.Fatalf("perm24(%d) = %d: out of range or repeated", x, y)
		}
		seen[y] = true
	}
}

func TestSpoofAddrsDistinctAndOutsidePlan(t *testing.T) {
	seen := map[netip.Addr]bool{}
	clients := netip.MustParsePrefix("10.0.0.0/8")
	servers := netip.MustParsePrefix("198.18.0.0/15")
	for i := range 200000 {
		a := spoofAddr(i, 0xabcdef)
		if seen[a] || clients.Contains(a) || servers.Contains(a) || !a.IsGlobalUnicast() && !a.IsPrivate() {
			t.Fatalf("spoofed address %d = %v: repeated or in a reserved range", i, a)
		}
		seen[a] = true
	}
}

func TestScanPortsDistinct(t *testing.T) {
	s := source{portOff: 12345}
	seen := map[uint16]bool{}
	for j := range scanEpisode {
		p := s.scanPort(j)
		if p == 0 || seen[p] {
			t.Fatalf("probe %d: port %d zero or repeated", j, p)
		}
		seen[p] = true
	}
}

func TestFlowCountsAddUp(t *testing.T) {
	for _, n := range []int{1, 2, 7, 100, 12345} {
		for _, m := range []Mix{DefaultMix, {Normal: 1}, {SYNFlood: 0.5, Scan: 0.5}, {Normal: 0.25, SYNFlood: 0.25, Scan: 0.25, Heavy: 0.25}} {
			c := flowCounts(n, m)
			sum := 0
			for i, v := range c {
				sum += v
				if exact := float64(n) * m.shares()[i]; float64(v) < exact-1 || float64(v) > exact+1 {
					t.Errorf("flows %d mix %v: scenario %d gets %d, want about %.1f", n, m, i, v, exact)
				}
			}
			if sum != n {
				t.Errorf("flows %d mix %v: counts %v add up to %d", n, m, c, sum)
			}
		}
	}
}
