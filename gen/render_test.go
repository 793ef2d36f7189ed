package gen

import (
	"testing"
)

// renderFixture returns a generator and one of its TCP flows, with a
// full-size data packet to render.
func renderFixture(tb testing.TB, v6 bool) (*Generator, *flow, pkt) {
	tb.Helper()
	o := testOptions()
	o.IPv6Share = 0
	if v6 {
		o.IPv6Share = 1
	}
	g, err := New(o)
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range g.heap {
		if f.proto == protoTCP {
			return g, f, pkt{flags: fACK | fPSH, plen: f.mss, seq: 12345, ack: 678}
		}
	}
	tb.Fatal("no TCP flow")
	return nil, nil, pkt{}
}

func TestChecksumKnownValue(t *testing.T) {
	// RFC 1071 §3 example: the words 0001 f203 f4f5 f6f7 sum to ddf2
	// (one's complement 220d).
	b := []byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}
	if got := checksum(b, 0); got != 0x220d {
		t.Errorf("checksum = %#04x, want 0x220d", got)
	}
	if got := checksum(b[:7], 0); got != ^uint16(0xddf2-0xf7) {
		t.Errorf("odd-length checksum = %#04x", got)
	}
}

func TestRenderDoesNotAllocate(t *testing.T) {
	g, f, p := renderFixture(t, false)
	if n := testing.AllocsPerRun(1000, func() { g.render(f, &p, 1) }); n != 0 {
		t.Errorf("render allocates %.1f times", n)
	}
}

func BenchmarkRender(b *testing.B) {
	for _, v6 := range []bool{false, true} {
		name := "ipv4"
		if v6 {
			name = "ipv6"
		}
		b.Run(name, func(b *testing.B) {
			g, f, p := renderFixture(b, v6)
			b.ReportAllocs()
			b.SetBytes(int64(g.render(f, &p, 0)))
			for range b.N {
				g.render(f, &p, 0)
			}
		})
	}
}
