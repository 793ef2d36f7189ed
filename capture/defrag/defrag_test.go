package defrag

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
)

var (
	srcA, dstA = [4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}
	src6       = [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 1}
	dst6       = [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 2}
)

func newR(t testing.TB, c Config) *Reassembler {
	t.Helper()
	r, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// balanced checks that every fragment taken is accounted for: in a
// datagram delivered (frags of them), dropped, or held.
func balanced(t *testing.T, st *capture.DefragStats, frags uint64) {
	t.Helper()
	var dropped uint64
	for _, n := range st.Dropped {
		dropped += n
	}
	if st.Fragments != frags+dropped+st.Held {
		t.Errorf("%d fragments taken, %d in datagrams + %d dropped + %d held", st.Fragments, frags, dropped, st.Held)
	}
}

func frames4(d []byte, ps []piece) [][]byte {
	fs := make([][]byte, len(ps))
	for i, pc := range ps {
		fs[i] = frag4(d, pc)
	}
	return fs
}

// TestInOrderOutOfOrderDuplicates: an IPv4 datagram cut in fragments
// comes back byte for byte the same whatever their order and however
// many come twice, decoded as one packet with its ports, at the time of
// the fragment that completed it.
func TestInOrderOutOfOrderDuplicates(t *testing.T) {
	d := ip4(srcA, dstA, 7, capture.ProtoUDP, nil, udp(5353, 53, 3000, 1))
	ps := split(len(d)-20, 1480)
	for _, tc := range []struct {
		name  string
		order []int
	}{
		{"in order", []int{0, 1, 2}},
		{"reversed", []int{2, 1, 0}},
		{"last first", []int{2, 0, 1}},
		{"duplicates", []int{0, 0, 2, 1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newR(t, DefaultConfig())
			var st capture.DefragStats
			var fs [][]byte
			for _, i := range tc.order {
				fs = append(fs, frag4(d, ps[i]))
			}
			got := run(r, &st, fs, every(time.Millisecond))
			if len(got) != 1 || !bytes.Equal(got[0].ip, d) {
				t.Fatalf("%d datagrams, want 1 equal to the original", len(got))
			}
			p := got[0].p
			if p.Key.Proto != capture.ProtoUDP || p.Directed().SrcPort != 5353 || p.Directed().DstPort != 53 ||
				p.PayloadLen != 3000 || p.Fragment != capture.NotFragment || p.LinkType != capture.LinkEthernet {
				t.Errorf("decoded as %+v", p)
			}
			// The datagram is whole at the last new piece: in "duplicates",
			// the fourth frame.
			last := map[string]int{"in order": 2, "reversed": 2, "last first": 2, "duplicates": 3}[tc.name]
			if !p.Timestamp.Equal(t0.Add(time.Duration(last) * time.Millisecond)) {
				t.Errorf("time %v, want the completing fragment's (frame %d)", p.Timestamp, last)
			}
			// A duplicate after the datagram was delivered starts a new one.
			balanced(t, &st, uint64(last+1))
		})
	}
}

// reference reassembles pieces under a policy the slow way, byte by
// byte: the exact answer the reassembler must give.
func reference(n int, pcs []piece, data func(piece) []byte, pol Policy) []byte {
	out := make([]byte, n)
	set := make([]bool, n)
	for _, pc := range pcs {
		for i, b := range data(pc) {
			if pol == Last || !set[pc.off+i] {
				out[pc.off+i], set[pc.off+i] = b, true
			}
		}
	}
	return out
}

// TestOverlapPolicies: fragments that overlap with different bytes give
// the bytes that came first under First and those that came last under
// Last, as a byte-by-byte reference says, over overlaps of every shape
// (inside, across the start, across the end, covering).
func TestOverlapPolicies(t *testing.T) {
	d := ip4(srcA, dstA, 9, capture.ProtoUDP, nil, udp(1000, 2000, 96, 3))
	n := len(d) - 20 // 104
	fill := func(pc piece, b byte) piece { pc.data = bytes.Repeat([]byte{b}, pc.n); return pc }
	for _, tc := range []struct {
		name string
		ps   []piece
	}{
		{"inside", []piece{{off: 0, n: 64, more: true}, fill(piece{off: 16, n: 24, more: true}, 0xAA), {off: 64, n: 40}}},
		{"across start", []piece{{off: 40, n: 64}, fill(piece{off: 24, n: 32, more: true}, 0xBB), {off: 0, n: 32, more: true}}},
		{"across end", []piece{{off: 0, n: 48, more: true}, fill(piece{off: 32, n: 40, more: true}, 0xCC), {off: 64, n: 40}}},
		{"covering", []piece{{off: 16, n: 16, more: true}, {off: 48, n: 8, more: true}, fill(piece{off: 8, n: 64, more: true}, 0xDD), {off: 0, n: 8, more: true}, {off: 72, n: 32}}},
	} {
		for _, pol := range []Policy{First, Last} {
			t.Run(tc.name+"/"+pol.String(), func(t *testing.T) {
				c := DefaultConfig()
				c.Policy = pol
				r := newR(t, c)
				var st capture.DefragStats
				got := run(r, &st, frames4(d, tc.ps), every(time.Millisecond))
				data := func(pc piece) []byte {
					if pc.data != nil {
						return pc.data
					}
					return d[20+pc.off : 20+pc.off+pc.n]
				}
				want := reference(n, tc.ps, data, pol)
				if len(got) != 1 || !bytes.Equal(got[0].ip[20:], want) || !bytes.Equal(got[0].ip[:20], d[:20]) {
					t.Fatalf("%d datagrams, want one with data %x", len(got), want)
				}
				balanced(t, &st, uint64(len(tc.ps)))
			})
		}
	}
}

// TestIPv6ExtensionHeaders: an IPv6 datagram with a hop-by-hop and a
// destination options header before the fragment header (the
// unfragmentable part, kept) and a destination options header after it
// (fragmented with the data) comes back as it was sent, shuffled.
func TestIPv6ExtensionHeaders(t *testing.T) {
	payload := append(make([]byte, 0, 2100), []byte{ProtoUDP6, 0, 1, 4, 0, 0, 0, 0}...) // dest opts after: next UDP, 8 bytes
	payload = append(payload, udp(4000, 53, 2000, 9)...)
	d := ip6(src6, dst6, []uint8{0, 60}, [][]byte{{1, 4, 0, 0, 0, 0}, {1, 4, 0, 0, 0, 0}}, 60, payload)
	unfrag, nextAt := 56, 48 // 40 + two 8-byte headers; the second names what follows
	ps := split(len(d)-unfrag, 1232)
	var fs [][]byte
	for _, i := range rand.New(rand.NewPCG(1, 2)).Perm(len(ps)) {
		fs = append(fs, frag6(d, unfrag, nextAt, 0xdeadbeef, ps[i]))
	}
	r := newR(t, DefaultConfig())
	var st capture.DefragStats
	got := run(r, &st, fs, every(time.Millisecond))
	if len(got) != 1 || !bytes.Equal(got[0].ip, d) {
		t.Fatalf("%d datagrams, want one equal to the original", len(got))
	}
	if p := got[0].p; p.Key.Proto != capture.ProtoUDP || p.Directed().SrcPort != 4000 || p.Directed().DstPort != 53 || p.EtherType != capture.EtherTypeIPv6 {
		t.Errorf("decoded as %+v", p)
	}
	balanced(t, &st, uint64(len(ps)))
}

const ProtoUDP6 = 17

// TestTimeout: a datagram whose pieces span more than the timeout from
// its first is dropped, counted; one within it is delivered.
func TestTimeout(t *testing.T) {
	d := ip4(srcA, dstA, 11, capture.ProtoUDP, nil, udp(1, 2, 2000, 5))
	fs := frames4(d, split(len(d)-20, 1480))
	c := DefaultConfig()
	c.Timeout = 30 * time.Second
	for _, tc := range []struct {
		gap  time.Duration
		want int
	}{{29 * time.Second, 1}, {31 * time.Second, 0}} {
		r := newR(t, c)
		var st capture.DefragStats
		got := run(r, &st, fs, every(tc.gap))
		if len(got) != tc.want {
			t.Errorf("pieces %v apart: %d datagrams, want %d", tc.gap, len(got), tc.want)
		}
		if tc.want == 0 && st.Dropped[capture.DropTimeout] != 1 {
			t.Errorf("pieces %v apart: %d dropped for the timeout, want 1 (the first; the second is held)", tc.gap, st.Dropped[capture.DropTimeout])
		}
		balanced(t, &st, uint64(tc.want*len(fs)))
	}
}

// TestTableFull: a new datagram with the table full evicts the oldest,
// counted; the others complete.
func TestTableFull(t *testing.T) {
	c := DefaultConfig()
	c.MaxDatagrams = 2
	r := newR(t, c)
	var st capture.DefragStats
	var ds [3][]byte
	var firsts, lasts [][]byte
	for i := range ds {
		ds[i] = ip4(srcA, dstA, uint16(100+i), capture.ProtoUDP, nil, udp(uint16(i+1), 9, 1000, byte(i)))
		ps := split(len(ds[i])-20, 512)
		firsts = append(firsts, frag4(ds[i], ps[0]))
		lasts = append(lasts, frag4(ds[i], ps[1]))
	}
	// The third's first piece evicts the first's; the first's last piece,
	// once the others are whole, starts a datagram anew.
	got := run(r, &st, append(firsts, lasts[1], lasts[2], lasts[0]), every(time.Millisecond))
	if len(got) != 2 || !bytes.Equal(got[0].ip, ds[1]) || !bytes.Equal(got[1].ip, ds[2]) {
		t.Fatalf("%d datagrams, want the two newest", len(got))
	}
	if st.Dropped[capture.DropTableFull] != 1 || st.Held != 1 {
		t.Errorf("table full: %d dropped, %d held; want the oldest's first piece dropped and its last held", st.Dropped[capture.DropTableFull], st.Held)
	}
	balanced(t, &st, 4)
}

// TestBytesFull: data past MaxBytes evicts the oldest datagrams, counted.
func TestBytesFull(t *testing.T) {
	c := DefaultConfig()
	c.MaxBytes = MinMaxBytes // 64 blocks
	r := newR(t, c)
	var st capture.DefragStats
	a := ip4(srcA, dstA, 1, capture.ProtoUDP, nil, udp(1, 2, 40000, 1))
	b := ip4(srcA, dstA, 2, capture.ProtoUDP, nil, udp(3, 4, 40000, 2))
	pa, pb := split(len(a)-20, 1480), split(len(b)-20, 1480)
	var fs [][]byte
	for _, pc := range pa[:20] { // 29,600 bytes: 29 blocks
		fs = append(fs, frag4(a, pc))
	}
	for _, pc := range pb { // 40,008 bytes, 40 blocks: a must go
		fs = append(fs, frag4(b, pc))
	}
	got := run(r, &st, fs, every(time.Millisecond))
	if len(got) != 1 || !bytes.Equal(got[0].ip, b) {
		t.Fatalf("%d datagrams, want b", len(got))
	}
	if st.Dropped[capture.DropBytesFull] != 20 {
		t.Errorf("%d dropped for bytes, want a's 20 pieces", st.Dropped[capture.DropBytesFull])
	}
	balanced(t, &st, uint64(len(pb)))
}

// TestTooLargeAndTooMany: a piece that would make the datagram over
// 65,535 bytes, or one piece too many, drops the datagram, counted.
func TestTooLargeAndTooMany(t *testing.T) {
	d := ip4(srcA, dstA, 3, capture.ProtoUDP, nil, udp(1, 2, 100, 1))
	r := newR(t, DefaultConfig())
	var st capture.DefragStats
	big := piece{off: 65528, n: 8, data: make([]byte, 8)} // ends at 65,536 + the header
	got := run(r, &st, frames4(d, []piece{{off: 0, n: 16, more: true}, big}), every(time.Millisecond))
	if len(got) != 0 || st.Dropped[capture.DropTooLarge] != 2 {
		t.Errorf("past 64 KiB: %d datagrams, %d dropped as too large, want 0 and 2", len(got), st.Dropped[capture.DropTooLarge])
	}
	balanced(t, &st, 0)

	st = capture.DefragStats{}
	var ps []piece
	for i := range maxFrags + 1 {
		ps = append(ps, piece{off: 8 * i, n: 8, more: true})
	}
	d = ip4(srcA, dstA, 4, capture.ProtoUDP, nil, udp(1, 2, 8*maxFrags+100, 1))
	got = run(r, &st, frames4(d, ps), every(time.Millisecond))
	if len(got) != 0 || st.Dropped[capture.DropTooManyFrags] != maxFrags+1 {
		t.Errorf("%d pieces: %d datagrams, %d dropped as too many", len(ps), len(got), st.Dropped[capture.DropTooManyFrags])
	}
	balanced(t, &st, 0)
}

// TestCutShortPasses: a fragment the snaplen cut cannot be reassembled:
// it is handed on as it was decoded, counted.
func TestCutShortPasses(t *testing.T) {
	d := ip4(srcA, dstA, 5, capture.ProtoUDP, nil, udp(1, 2, 3000, 1))
	f := frag4(d, piece{off: 0, n: 1480, more: true})[:96]
	var p capture.Packet
	if capture.Decode(&p, capture.LinkEthernet, f, 1514, t0) != capture.ReasonNone || p.Fragment != capture.FirstFragment {
		t.Fatal("not decoded as a first fragment")
	}
	key, hash := p.Key, p.Hash
	var st capture.DefragStats
	if res, _ := newR(t, DefaultConfig()).Add(&p, f, &st); res != capture.FragPass || st.Passed != 1 || st.Fragments != 0 ||
		p.Key != key || p.Hash != hash || p.Fragment != capture.FirstFragment {
		t.Errorf("cut-short fragment: %v, stats %+v", res, st)
	}
}

// TestRandomFragmentation: random datagrams (IPv4 and IPv6, up to the
// largest), cut at random 8-byte boundaries, the pieces of several
// interleaved and shuffled, each come back byte for byte under First.
func TestRandomFragmentation(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	r := newR(t, Config{MaxDatagrams: 64, MaxBytes: 8 << 20, Timeout: time.Minute})
	var st capture.DefragStats
	for round := range 50 {
		var ds [][]byte
		var fs [][]byte
		var npieces uint64
		for k := range 1 + rng.IntN(6) {
			id := uint16(round*8 + k)
			n := rng.IntN(65535 - 60 - 8)
			if rng.IntN(4) == 0 {
				n = rng.IntN(3000)
			}
			var d []byte
			var mk func(pc piece) []byte
			if rng.IntN(2) == 0 {
				d = ip4(srcA, dstA, id, capture.ProtoUDP, nil, udp(uint16(k), 53, n, byte(round)))
				mk = func(pc piece) []byte { return frag4(d, pc) }
			} else {
				n = min(n, 65535-16)
				d = ip6(src6, dst6, []uint8{0}, [][]byte{{1, 4, 0, 0, 0, 0}}, ProtoUDP6, udp(uint16(k), 53, n, byte(round)))
				mk = func(pc piece) []byte { return frag6(d, 48, 40, uint32(id)<<8, pc) }
			}
			hl := 20
			if d[0]>>4 == 6 {
				hl = 48
			}
			total := len(d) - hl
			var ps []piece
			for off := 0; off < total; {
				sz := 8 * (1 + rng.IntN(max(1, total/8/maxFrags*2+8)))
				if off+sz >= total {
					sz = total - off
				}
				ps = append(ps, piece{off: off, n: sz, more: off+sz < total})
				off += sz
			}
			if len(ps) > maxFrags {
				continue
			}
			ds = append(ds, d)
			npieces += uint64(len(ps))
			for _, pc := range ps {
				fs = append(fs, mk(pc))
			}
		}
		rng.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
		taken := st.Fragments
		got := run(r, &st, fs, every(time.Microsecond))
		if st.Fragments-taken != npieces {
			t.Fatalf("round %d: %d pieces taken of %d", round, st.Fragments-taken, npieces)
		}
		if len(got) != len(ds) {
			t.Fatalf("round %d: %d datagrams of %d", round, len(got), len(ds))
		}
		for _, g := range got {
			found := false
			for _, d := range ds {
				found = found || bytes.Equal(g.ip, d)
			}
			if !found {
				t.Fatalf("round %d: a datagram (%d bytes) is none of those sent", round, len(g.ip))
			}
		}
		if r.InProgress() != 0 || st.Held != 0 {
			t.Fatalf("round %d: %d datagrams still in progress", round, r.InProgress())
		}
	}
	var dropped uint64
	for _, n := range st.Dropped {
		dropped += n
	}
	if dropped != 0 || st.Fragments == 0 {
		t.Errorf("%d fragments dropped, %d taken", dropped, st.Fragments)
	}
}

// TestAddNoAllocs: taking fragments and delivering their datagram
// allocates nothing.
func TestAddNoAllocs(t *testing.T) {
	d := ip4(srcA, dstA, 12, capture.ProtoUDP, nil, udp(1, 2, 4000, 1))
	fs := frames4(d, split(len(d)-20, 1480))
	r := newR(t, DefaultConfig())
	var st capture.DefragStats
	var p capture.Packet
	n := testing.AllocsPerRun(100, func() {
		for _, f := range fs {
			capture.Decode(&p, capture.LinkEthernet, f, len(f), t0)
			r.Add(&p, f, &st)
		}
	})
	if n != 0 || st.Datagrams != 101 {
		t.Errorf("%v allocations per datagram (%d delivered)", n, st.Datagrams)
	}
}

// BenchmarkAdd is a 3-fragment IPv4 datagram taken and delivered.
func BenchmarkAdd(b *testing.B) {
	d := ip4(srcA, dstA, 12, capture.ProtoUDP, nil, udp(1, 2, 4000, 1))
	fs := frames4(d, split(len(d)-20, 1480))
	r := newR(b, DefaultConfig())
	var st capture.DefragStats
	var p capture.Packet
	b.ReportAllocs()
	for b.Loop() {
		for _, f := range fs {
			capture.Decode(&p, capture.LinkEthernet, f, len(f), t0)
			r.Add(&p, f, &st)
		}
	}
}

// TestConfig: the policies by name, and the bounds.
func TestConfig(t *testing.T) {
	for _, p := range []Policy{First, Last} {
		if q, err := ParsePolicy(p.String()); err != nil || q != p {
			t.Errorf("%v: %v %v", p, q, err)
		}
	}
	if _, err := ParsePolicy("bsd"); !errors.Is(err, ErrPolicy) {
		t.Errorf("bsd: %v", err)
	}
	if _, err := New(Config{MaxDatagrams: 1, MaxBytes: MinMaxBytes - 1, Timeout: time.Second}); err == nil {
		t.Error("max bytes under one datagram accepted")
	}
	if c := (Config{}).WithDefaults(); c != DefaultConfig() {
		t.Errorf("zero config's defaults %+v", c)
	}
}

// FuzzAdd: any frames, decoded and handed to a small reassembler, never
// panic, and every fragment taken stays accounted for.
func FuzzAdd(f *testing.F) {
	d := ip4(srcA, dstA, 7, capture.ProtoUDP, nil, udp(5353, 53, 300, 1))
	for _, pc := range split(len(d)-20, 104) {
		f.Add(frag4(d, pc), uint16(0))
	}
	d6 := ip6(src6, dst6, []uint8{0}, [][]byte{{1, 4, 0, 0, 0, 0}}, ProtoUDP6, udp(1, 2, 300, 1))
	f.Add(frag6(d6, 48, 40, 1, piece{off: 8, n: 64, more: true}), uint16(3))
	r, _ := New(Config{MaxDatagrams: 4, MaxBytes: MinMaxBytes, Timeout: time.Second})
	var st capture.DefragStats
	f.Fuzz(func(t *testing.T, frame []byte, jitter uint16) {
		var p capture.Packet
		// Two pieces of the frame: an offset or a length changed by the
		// fuzzer's bytes reaches every path.
		for _, fr := range [][]byte{frame, mutate(frame, jitter)} {
			if r := capture.Decode(&p, capture.LinkEthernet, fr, len(fr), t0.Add(time.Duration(jitter)*time.Millisecond)); p.Fragment == capture.NotFragment ||
				r != capture.ReasonNone && r != capture.ReasonTransportTruncated {
				continue
			}
			r.Add(&p, fr, &st)
		}
		var dropped uint64
		for _, n := range st.Dropped {
			dropped += n
		}
		if st.Fragments < st.Datagrams+dropped+st.Held || st.Held != r.held || r.InProgress() > 4 {
			t.Fatalf("stats %+v, %d in progress", st, r.InProgress())
		}
	})
}

// mutate copies b with its IPv4 fragment offset (or a byte near it) set
// from j.
func mutate(b []byte, j uint16) []byte {
	c := append([]byte(nil), b...)
	if len(c) >= 22 {
		binary.BigEndian.PutUint16(c[20:], j)
	}
	return c
}

// TestEmptyPiecesNeverComplete: pieces without data cover nothing, so a
// datagram of them is never whole, even in the slot of one that was.
func TestEmptyPiecesNeverComplete(t *testing.T) {
	r := newR(t, Config{MaxDatagrams: 1, MaxBytes: MinMaxBytes, Timeout: time.Minute})
	var st capture.DefragStats
	a := ip4(srcA, dstA, 1, capture.ProtoUDP, nil, udp(1, 2, 32, 1))
	b := ip4(srcA, dstA, 2, capture.ProtoUDP, nil, udp(1, 2, 32, 1))
	fs := append(frames4(a, split(len(a)-20, 16)), frames4(b, []piece{{off: 0, n: 0, more: true}, {off: 8, n: 0}})...)
	got := run(r, &st, fs, every(time.Millisecond))
	if len(got) != 1 || !bytes.Equal(got[0].ip, a) || st.Held != 2 {
		t.Errorf("%d datagrams, %d pieces held; want a alone, b's two held", len(got), st.Held)
	}
}
