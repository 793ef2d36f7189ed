package capture

import (
	"net/netip"
	"testing"
)

// The vectors are the Community ID spec's implementations' published
// outputs for seed 0.
func TestCommunityID(t *testing.T) {
	for _, c := range []struct {
		k    Key
		want string
	}{
		{Key{Src: netip.MustParseAddr("192.168.0.1"), Dst: netip.MustParseAddr("10.0.0.5"), SrcPort: 12345, DstPort: 80, Proto: ProtoTCP}, "1:JHvDxB6S6/K68OntUBf4DJZYvkM="},
	} {
		if got := CommunityID(&c.k); got != c.want {
			t.Errorf("CommunityID(%v) = %s, want %s", c.k, got, c.want)
		}
		// Either direction, and IPv4-mapped addresses, give the same ID.
		r := c.k.Reverse()
		r.Src, r.Dst = netip.AddrFrom16(r.Src.As16()), netip.AddrFrom16(r.Dst.As16())
		if got := CommunityID(&r); got != c.want {
			t.Errorf("CommunityID(%v) = %s, want %s", r, got, c.want)
		}
	}
}
