package report

import (
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/record"
)

// flows makes n records between hosts of a few hundred addresses (a
// skewed mix: some talk much more), or of more than TopCapacity.
func flows(n, hosts int, seed uint64) []record.Flow {
	r := rand.New(rand.NewPCG(seed, seed+1))
	z := rand.NewZipf(r, 1.3, 4, uint64(hosts-1))
	out := make([]record.Flow, n)
	for i := range out {
		a, b := z.Uint64(), r.Uint64N(uint64(hosts))
		out[i] = record.Flow{UID: uint64(i + 1), Start: int64(i) * 1e6, End: int64(i)*1e6 + 5e5,
			Orig: netip.AddrFrom4([4]byte{10, 0, byte(a >> 8), byte(a)}), Resp: netip.AddrFrom4([4]byte{192, 168, byte(b >> 8), byte(b)}),
			OrigPort: uint16(1024 + r.IntN(60000)), RespPort: uint16([]int{80, 443, 53, 22, 25}[z.Uint64()%5]), Proto: capture.ProtoTCP,
			State: acsm.SF, OrigPkts: 1 + r.Uint64N(50), RespPkts: r.Uint64N(50), EndReason: record.EndOfFlow}
		out[i].OrigIPBytes, out[i].RespIPBytes = out[i].OrigPkts*(40+r.Uint64N(1400)), out[i].RespPkts*(40+r.Uint64N(1400))
	}
	return out
}

type sums map[string]Row

// exact sums the flows by key, as the tops should while exact.
func exact(fs []record.Flow, key func(*record.Flow) string) sums {
	m := sums{}
	for i := range fs {
		f := &fs[i]
		r := m[key(f)]
		r.Flows++
		r.Packets += f.OrigPkts + f.RespPkts
		r.Bytes += f.OrigIPBytes + f.RespIPBytes
		m[key(f)] = r
	}
	return m
}

func origKey(f *record.Flow) string { return f.Orig.String() }
func respKey(f *record.Flow) string { return f.Resp.String() }
func portKey(f *record.Flow) string { return Port{"tcp", f.RespPort}.String() }

// TestTopsExact: below TopCapacity keys the tables are the records' sums,
// heaviest first, and the top flows are the heaviest records.
func TestTopsExact(t *testing.T) {
	fs := flows(20_000, 300, 1)
	tops := NewTops(10)
	for i := range fs {
		tops.AddRecord(&fs[i])
	}
	tt := tops.Tables(10)
	for _, c := range []struct {
		name   string
		tables [2]KeyTable
		want   sums
	}{{"src", tt.Src, exact(fs, origKey)}, {"dst", tt.Dst, exact(fs, respKey)}, {"ports", tt.Ports, exact(fs, portKey)}} {
		for f, kt := range c.tables {
			if !kt.Exact || kt.Keys != len(c.want) || len(kt.Rows) != min(10, len(c.want)) {
				t.Fatalf("%s by %s: exact %v, %d keys (want %d), %d rows", c.name, kt.By, kt.Exact, kt.Keys, len(c.want), len(kt.Rows))
			}
			for i, r := range kt.Rows {
				if w := c.want[r.Key]; w != r.Row {
					t.Errorf("%s by %s: %s is %+v, the records sum to %+v", c.name, kt.By, r.Key, r.Row, w)
				}
				if i > 0 && r.get(figure(f)) > kt.Rows[i-1].get(figure(f)) {
					t.Errorf("%s by %s: row %d heavier than row %d", c.name, kt.By, i, i-1)
				}
			}
			// Nothing left out is heavier than the last row.
			last := kt.Rows[len(kt.Rows)-1].get(figure(f))
			shown := map[string]bool{}
			for _, r := range kt.Rows {
				shown[r.Key] = true
			}
			for k, w := range c.want {
				if !shown[k] && w.get(figure(f)) > last {
					t.Errorf("%s by %s: %s (%d) is left out, heavier than the last row (%d)", c.name, kt.By, k, w.get(figure(f)), last)
				}
			}
		}
	}
	for f, ft := range tt.Flows {
		var heaviest uint64
		for i := range fs {
			w := fs[i].OrigIPBytes + fs[i].RespIPBytes
			if f == int(byPackets) {
				w = fs[i].OrigPkts + fs[i].RespPkts
			}
			heaviest = max(heaviest, w)
		}
		c := ft.Rows[0]
		if got := map[string]uint64{"bytes": c.Bytes, "packets": c.Packets}[ft.By]; got != heaviest || c.UID == "" || c.State != "SF" {
			t.Errorf("top flow by %s: %+v, the heaviest record has %d", ft.By, c, heaviest)
		}
	}
}

// TestTopsApproximate: past TopCapacity addresses, Space-Saving's bounds
// hold: each row's bytes are over the records' by at most its Err, and
// every address with more than total/TopCapacity of the bytes is held.
func TestTopsApproximate(t *testing.T) {
	fs := flows(100_000, 30_000, 2)
	tops := NewTops(TopCapacity)
	for i := range fs {
		tops.AddRecord(&fs[i])
	}
	want := exact(fs, origKey)
	tt := tops.Tables(TopCapacity)
	for f, kt := range tt.Src[:1] {
		if kt.Exact {
			t.Fatalf("by %s: exact with %d keys", kt.By, len(want))
		}
		held := map[string]bool{}
		for _, r := range kt.Rows {
			held[r.Key] = true
			w, got := want[r.Key].get(figure(f)), r.get(figure(f))
			if got < w || got-r.Err > w {
				t.Fatalf("by %s: %s is %d (err %d), the records sum to %d", kt.By, r.Key, got, r.Err, w)
			}
		}
		total := tt.Total.get(figure(f))
		for k, w := range want {
			if w.get(figure(f)) > total/TopCapacity && !held[k] {
				t.Errorf("by %s: %s has %d of %d, more than 1/%d, and is not held", kt.By, k, w.get(figure(f)), total, TopCapacity)
			}
		}
	}
}

// TestTopsInterimLeftOut: an interim record is counted apart, its flow
// once, by its last record.
func TestTopsInterimLeftOut(t *testing.T) {
	fs := flows(100, 10, 3)
	tops := NewTops(5)
	for i := range fs {
		tops.AddRecord(&fs[i])
	}
	interim := fs[0]
	interim.EndReason = record.EndActive
	tops.AddRecord(&interim)
	if tt := tops.Tables(5); tt.Total.Flows != 100 || tt.Interim != 1 {
		t.Errorf("%d flows, %d interim", tt.Total.Flows, tt.Interim)
	}
}

func BenchmarkTopsAddRecord(b *testing.B) {
	fs := flows(1<<16, 50_000, 4)
	tops := NewTops(10)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		tops.AddRecord(&fs[i&(1<<16-1)])
	}
}
