package watchlist

import (
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
)

// TestProbeMatchesContains: on random prefixes of every length and random
// addresses, many inside them, an address probes listed exactly when a
// listed prefix contains it (the keys in an exact set, so no filter error
// is involved).
func TestProbeMatchesContains(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	randAddr := func(v4 bool) netip.Addr {
		if v4 {
			return netip.AddrFrom4([4]byte{byte(r.IntN(4)), byte(r.IntN(4)), byte(r.IntN(256)), byte(r.IntN(256))})
		}
		var b [16]byte
		b[0], b[1] = 0x20, 0x01
		for i := 2; i < 16; i++ {
			b[i] = byte(r.IntN(3))
		}
		return netip.AddrFrom16(b)
	}
	var listed []netip.Prefix
	keys := map[uint64]bool{}
	for range 300 {
		v4 := r.IntN(2) == 0
		a := randAddr(v4)
		var bits int
		if v4 {
			bits = 8 + r.IntN(25)
		} else if bits = 16 + r.IntN(49); r.IntN(4) == 0 {
			bits = 128
		}
		p, err := parseEntry(netip.PrefixFrom(a, bits).String())
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, p)
		Keys(p, func(h uint64) { keys[h] = true })
	}
	for i := range 20000 {
		a := randAddr(i%2 == 0)
		if i%3 == 0 { // inside a listed prefix
			p := listed[r.IntN(len(listed))]
			b := p.Addr().As16()
			if p.Addr().Is4() {
				setBits(&b, true, p.Bits(), 32, r.Uint64())
				a = netip.AddrFrom4([4]byte(b[12:]))
			} else {
				setBits(&b, false, p.Bits(), 128, r.Uint64())
				a = netip.AddrFrom16(b)
			}
		}
		want := false
		for _, p := range listed {
			if p.Contains(a) {
				want = true
				break
			}
		}
		got := Probe(a, func(h uint64) bool { return keys[h] })
		if got != want {
			t.Fatalf("%s: probe %v, a listed prefix contains it: %v", a, got, want)
		}
	}
}

// TestParse: addresses, prefixes and comments load; every bad line is
// named and skipped.
func TestParse(t *testing.T) {
	const list = `# scanners
192.0.2.7
198.51.100.0/24   # a /24
10.1.2.3/8
2001:db8::/32
2001:db8::1
::ffff:203.0.113.9
not-an-address
10.0.0.0/4
2001:db8::/96
fe80::1%eth0
`
	got, errs := Parse("list.txt", strings.NewReader(list))
	want := []string{"192.0.2.7/32", "198.51.100.0/24", "10.0.0.0/8", "2001:db8::/32", "2001:db8::1/128", "203.0.113.9/32"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i, p := range got {
		if p.String() != want[i] {
			t.Errorf("entry %d: %s, want %s", i, p, want[i])
		}
	}
	wantErrs := []string{
		`list.txt:8: "not-an-address" is not an address or CIDR prefix`,
		`list.txt:9: "10.0.0.0/4": prefixes shorter than /8 are not listed (they would match a large part of the Internet)`,
		`list.txt:10: "2001:db8::/96": IPv6 prefixes are /64 or shorter, or /128`,
		`list.txt:11: "fe80::1%eth0": addresses with a zone are not listed`,
	}
	if len(errs) != len(wantErrs) {
		t.Fatalf("errors %v", errs)
	}
	for i, e := range errs {
		if e.Error() != wantErrs[i] {
			t.Errorf("error %d: %s\nwant %s", i, e, wantErrs[i])
		}
	}
}
