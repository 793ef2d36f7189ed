package capture

import (
	"math/rand/v2"
	"net/netip"
	"testing"
)

func randKey(r *rand.Rand) Key {
	var k Key
	if r.IntN(2) == 0 {
		k.Src = netip.AddrFrom4([4]byte{10, byte(r.IntN(3)), byte(r.IntN(3)), byte(r.IntN(256))})
		k.Dst = netip.AddrFrom4([4]byte{10, byte(r.IntN(3)), byte(r.IntN(3)), byte(r.IntN(256))})
	} else {
		var a, b [16]byte
		a[0], b[0] = 0x20, 0x20
		a[15], b[15] = byte(r.IntN(4)), byte(r.IntN(4))
		a[7], b[7] = byte(r.IntN(2)), byte(r.IntN(2))
		k.Src, k.Dst = netip.AddrFrom16(a), netip.AddrFrom16(b)
	}
	k.SrcPort, k.DstPort = uint16(r.IntN(4)), uint16(r.IntN(4))
	k.Proto = uint8(r.IntN(3) + 5)
	return k
}

func TestCanonical(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		k := randKey(r)
		c1, rev1 := k.Canonical()
		c2, rev2 := k.Reverse().Canonical()
		if c1 != c2 {
			t.Fatalf("%v and its reverse canonicalise differently: %v / %v", k, c1, c2)
		}
		if k != k.Reverse() && rev1 == rev2 {
			t.Fatalf("%v: both directions say reversed=%v", k, rev1)
		}
		if k.Hash() != k.Reverse().Hash() {
			t.Fatalf("%v: direction changes the hash", k)
		}
		var b [KeySize]byte
		k.PutBinary(&b)
		var back Key
		if err := back.UnmarshalBinary(b[:]); err != nil || back != k {
			t.Fatalf("binary round trip: %v -> %v (%v)", k, back, err)
		}
	}
}

// TestSetKeyMatchesKey holds the decoder's direct key building equal to
// Key.Canonical and Key.Hash.
func TestSetKeyMatchesKey(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 10000 {
		k := randKey(r)
		var p Packet
		if k.Src.Is4() {
			s, d := k.Src.As4(), k.Dst.As4()
			setKey(&p, s[:], d[:], k.SrcPort, k.DstPort, k.Proto)
		} else {
			s, d := k.Src.As16(), k.Dst.As16()
			setKey(&p, s[:], d[:], k.SrcPort, k.DstPort, k.Proto)
		}
		c, rev := k.Canonical()
		if p.Key != c || p.Reversed != rev || p.Hash != k.Hash() || p.Directed() != k {
			t.Fatalf("%v: decoder built %v rev=%v hash=%x, want %v rev=%v hash=%x", k, p.Key, p.Reversed, p.Hash, c, rev, k.Hash())
		}
	}
}

// TestHashPinned fixes the flow hash: it is compared across agents and
// stored in files, so a change here is a format change.
func TestHashPinned(t *testing.T) {
	k := Key{Src: netip.MustParseAddr("192.0.2.1"), Dst: netip.MustParseAddr("198.51.100.2"), SrcPort: 12345, DstPort: 443, Proto: ProtoTCP}
	k6 := Key{Src: netip.MustParseAddr("2001:db8::1"), Dst: netip.MustParseAddr("2001:db8::2"), SrcPort: 53, DstPort: 5353, Proto: ProtoUDP}
	for _, c := range []struct {
		k    Key
		want uint64
	}{{k, 0xad846f426de324e6}, {k6, 0x6d0d718e00e96679}} {
		if got := c.k.Hash(); got != c.want {
			t.Errorf("%v: hash %#x, pinned %#x", c.k, got, c.want)
		}
	}
}

func TestKeyString(t *testing.T) {
	k := Key{Src: netip.MustParseAddr("2001:db8::1"), Dst: netip.MustParseAddr("10.0.0.1"), SrcPort: 1, DstPort: 2, Proto: ProtoUDP}
	if s := k.String(); s != "udp [2001:db8::1]:1 -> 10.0.0.1:2" {
		t.Errorf("String() = %q", s)
	}
}

func TestHashSpread(t *testing.T) {
	// Chi-square of the low 8 bits of the hashes of sequential keys.
	const n, bins = 1 << 16, 256
	var counts [bins]int
	for i := range n {
		k := Key{Src: netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), Dst: netip.MustParseAddr("10.1.0.1"), SrcPort: 1000, DstPort: 80, Proto: ProtoTCP}
		counts[k.Hash()%bins]++
	}
	exp := float64(n) / bins
	chi := 0.0
	for _, c := range counts {
		d := float64(c) - exp
		chi += d * d / exp
	}
	// 255 degrees of freedom: the 99.9th percentile is about 330.
	if chi > 330 {
		t.Errorf("chi-square %.1f over 256 bins: hash bits are not uniform", chi)
	}
}
