package dedup

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/gen"
)

// t0 is the time of the tests' first packets.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func pkt() capture.Packet {
	k, _ := capture.Key{Src: mustAddr("10.0.0.1"), Dst: mustAddr("10.0.0.2"), SrcPort: 40000, DstPort: 443, Proto: capture.ProtoTCP}.Canonical()
	return capture.Packet{Timestamp: t0, Key: k, Hash: k.Hash(), TTL: 64, IPID: 7, IPLen: 140, HasTCP: true,
		Flags: capture.ACK | capture.PSH, Seq: 1000, Ack: 2000, Window: 512, PayloadLen: 100, Payload: []byte("GET / HTTP/1.1\r\nHost: example")}
}

func TestFingerprintFields(t *testing.T) {
	d, _ := New(Config{})
	base := pkt()
	fp := d.Fingerprint(&base)
	same := map[string]func(p *capture.Packet){
		"ttl":       func(p *capture.Packet) { p.TTL = 1 },
		"vlans":     func(p *capture.Packet) { p.VLANs = 2 },
		"link type": func(p *capture.Packet) { p.LinkType = 113 },
		"wire len":  func(p *capture.Packet) { p.WireLen, p.CapLen = 1500, 96 },
		"timestamp": func(p *capture.Packet) { p.Timestamp = t0.Add(time.Second) },
		"hash zero": func(p *capture.Packet) { p.Hash = 0 }, // recomputed from the key
	}
	differ := map[string]func(p *capture.Packet){
		"direction":   func(p *capture.Packet) { p.Reversed = true },
		"ip id":       func(p *capture.Packet) { p.IPID++ },
		"ip length":   func(p *capture.Packet) { p.IPLen++ },
		"flags":       func(p *capture.Packet) { p.Flags |= capture.FIN },
		"seq":         func(p *capture.Packet) { p.Seq++ },
		"ack":         func(p *capture.Packet) { p.Ack++ },
		"window":      func(p *capture.Packet) { p.Window++ },
		"payload len": func(p *capture.Packet) { p.PayloadLen++ },
		"payload":     func(p *capture.Packet) { p.Payload = []byte("GET / HTTP/1.0\r\nHost: example") },
		"port": func(p *capture.Packet) {
			k := p.Key
			k.DstPort++
			p.Key, p.Hash = k, k.Hash()
		},
		"fragment": func(p *capture.Packet) { p.Fragment = capture.FirstFragment },
	}
	for name, mut := range same {
		p := pkt()
		mut(&p)
		if d.Fingerprint(&p) != fp {
			t.Errorf("changing the %s changed the fingerprint", name)
		}
	}
	for name, mut := range differ {
		p := pkt()
		mut(&p)
		if d.Fingerprint(&p) == fp {
			t.Errorf("changing the %s kept the fingerprint", name)
		}
	}
}

func TestWindowForgets(t *testing.T) {
	d, _ := New(Config{Window: 50 * time.Millisecond})
	p := pkt()
	if d.Seen(&p) {
		t.Fatal("first packet seen as duplicate")
	}
	for _, c := range []struct {
		after time.Duration
		dup   bool
	}{{time.Microsecond, true}, {49 * time.Millisecond, true}, {200 * time.Millisecond, false}} {
		q := pkt()
		q.Timestamp = t0.Add(c.after)
		q.TTL = 50
		if got := d.Seen(&q); got != c.dup {
			t.Errorf("copy %v later: duplicate=%t, want %t", c.after, got, c.dup)
		}
	}
}

func TestRetransmissions(t *testing.T) {
	d, err := New(Config{Retrans: RetransConfig{Enabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	p := pkt()
	seq := []struct {
		after time.Duration
		ipid  uint32
		want  Verdict
	}{
		{0, 7, Unique},
		{10 * time.Microsecond, 7, Duplicate},       // SPAN copy
		{300 * time.Millisecond, 9, Retransmission}, // RTO: new IP ID, same segment
		{300*time.Millisecond + 5, 9, Duplicate},    // SPAN copy of the retransmission
		{10 * time.Second, 11, Unique},              // long after both windows
		{10*time.Second + time.Second, 12, Retransmission},
	}
	for i, s := range seq {
		q := p
		q.Timestamp, q.IPID = t0.Add(s.after), s.ipid
		if got := d.Check(&q); got != s.want {
			t.Errorf("step %d (+%v): %v, want %v", i, s.after, got, s.want)
		}
	}
	// A pure ACK repeated with a new IP ID is not a retransmission.
	a := pkt()
	a.Timestamp, a.PayloadLen, a.Payload, a.Flags, a.Seq = t0.Add(20*time.Second), 0, nil, capture.ACK, 5
	d.Check(&a)
	a.IPID++
	a.Timestamp = a.Timestamp.Add(time.Millisecond * 100)
	if got := d.Check(&a); got != Unique {
		t.Errorf("repeated pure ACK: %v, want unique", got)
	}
	if _, dups, re := d.Counts(); dups != 2 || re != 2 {
		t.Errorf("counts: %d duplicates, %d retransmissions; want 2, 2", dups, re)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []Config{
		{Window: -1},
		{FPRate: 2},
		{Past: 100},
		{PayloadBytes: 65},
		{Window: 2, Past: 5},
		{Retrans: RetransConfig{Enabled: true, Window: time.Millisecond}},
		{Retrans: RetransConfig{Enabled: true, FPRate: -1}},
	}
	for _, c := range bad {
		if _, err := New(c); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: %v, want ErrInvalidConfig", c, err)
		}
	}
	// All broken rules are reported, not only the first.
	err := Config{Window: -1, FPRate: 2, Past: 100, PacketsPerWindow: 1, PayloadBytes: 1}.Validate()
	if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != 3 {
		t.Errorf("%d errors reported, want 3: %v", n, err)
	}
}

// TestMetrics: the counters and the windows' gauges of both structures;
// the FBF's own gauges only with the FBF, the table's forgetting only
// with the table.
func TestMetrics(t *testing.T) {
	for _, fbf := range []bool{false, true} {
		a, _ := New(Config{FBF: fbf, Retrans: RetransConfig{Enabled: true}})
		b, _ := New(Config{FBF: fbf})
		p := pkt()
		a.Check(&p)
		a.Check(&p)
		b.Check(&p)
		a.Publish()
		b.Publish()
		got := map[string]float64{}
		for _, m := range Metrics(a, b) {
			got[m.Name+"/"+m.Window] = m.Value
		}
		if got[MetricPackets+"/"] != 3 || got[MetricDuplicates+"/"] != 1 {
			t.Errorf("fbf=%v: counters %v", fbf, got)
		}
		if got[MetricMemory+"/duplicate"] != float64(a.dup.MemoryBytes()+b.dup.MemoryBytes()) || got[MetricFPP+"/duplicate"] <= 0 {
			t.Errorf("fbf=%v: window gauges %v", fbf, got)
		}
		// The retransmission window is an FBF either way.
		_, filters := got[MetricFilters+"/duplicate"]
		_, forgot := got[MetricForgottenEarly+"/duplicate"]
		_, forgotRetx := got[MetricForgottenEarly+"/retransmission"]
		if fbf && (got[MetricFilters+"/duplicate"] != 6 || forgot) || !fbf && (filters || !forgot) ||
			got[MetricFilters+"/retransmission"] != 3 || forgotRetx {
			t.Errorf("fbf=%v: structure's gauges %v", fbf, got)
		}
	}
}

func TestNoAllocs(t *testing.T) {
	d, _ := New(Config{Retrans: RetransConfig{Enabled: true}})
	evs := gen.SPANStream(3, 4096, 100, 200_000, 0.02, time.Millisecond)
	i := 0
	if n := testing.AllocsPerRun(10_000, func() {
		d.Check(&evs[i%len(evs)].P)
		i++
	}); n != 0 {
		t.Errorf("%v allocs per packet", n)
	}
}

func TestNoAllocsSplit(t *testing.T) {
	d, _ := New(Config{Retrans: RetransConfig{Enabled: true}})
	evs := gen.SPANStream(3, 4096, 100, 200_000, 0.02, time.Millisecond)
	i := 0
	var fp uint64
	if n := testing.AllocsPerRun(10_000, func() {
		fp = Fingerprint(&evs[i%len(evs)].P, 32)
		i++
	}); n != 0 {
		t.Errorf("Fingerprint: %v allocs per packet", n)
	}
	i = 0
	if n := testing.AllocsPerRun(10_000, func() {
		e := &evs[i%len(evs)]
		d.CheckPrint(&e.P, fp^uint64(i))
		i++
	}); n != 0 {
		t.Errorf("CheckPrint: %v allocs per packet", n)
	}
}

// TestCheckPrintSplit checks that the split check (fingerprint with the
// payload, check on a payload-less copy) gives Check's verdicts.
func TestCheckPrintSplit(t *testing.T) {
	cfg := Config{Retrans: RetransConfig{Enabled: true}}
	whole, _ := New(cfg)
	split, _ := New(cfg)
	evs := gen.SPANStream(5, 4096, 100, 200_000, 0.05, time.Millisecond)
	var dups int
	for i := range evs {
		p := evs[i].P
		fp := split.Fingerprint(&p)
		if fp != Fingerprint(&p, cfg.WithDefaults().PayloadBytes) {
			t.Fatal("method and function fingerprints differ")
		}
		want := whole.Check(&p)
		p.Payload = nil
		if got := split.CheckPrint(&p, fp); got != want {
			t.Fatalf("packet %d: split verdict %v, Check %v", i, got, want)
		}
		if want == Duplicate {
			dups++
		}
	}
	if dups == 0 {
		t.Fatal("the stream has no duplicates")
	}
}

func TestShare(t *testing.T) {
	c := Config{PacketsPerWindow: 1001, Retrans: RetransConfig{Enabled: true, PacketsPerWindow: 9}}
	if got := c.Share(1); got != c.WithDefaults() {
		t.Errorf("Share(1) = %+v, want the defaults filled", got)
	}
	got := c.Share(4)
	if got.PacketsPerWindow != 251 || got.Retrans.PacketsPerWindow != 3 {
		t.Errorf("Share(4): %d and %d packets per window, want 251 and 3", got.PacketsPerWindow, got.Retrans.PacketsPerWindow)
	}
	if err := got.Validate(); err != nil {
		t.Error(err)
	}
}

func BenchmarkFingerprint(b *testing.B) {
	evs := gen.SPANStream(4, 1<<16, 5000, 1_000_000, 0.02, time.Millisecond)
	b.ReportAllocs()
	var s uint64
	for i := 0; b.Loop(); i++ {
		s += Fingerprint(&evs[i&(len(evs)-1)].P, 32)
	}
	_ = s
}

func BenchmarkSeen(b *testing.B) {
	for _, retrans := range []bool{false, true} {
		name := "dup-window"
		if retrans {
			name = "dup+retrans-windows"
		}
		b.Run(name, func(b *testing.B) {
			d, _ := New(Config{PacketsPerWindow: 50_000, Retrans: RetransConfig{Enabled: retrans}})
			evs := gen.SPANStream(4, 1<<16, 5000, 1_000_000, 0.02, time.Millisecond)
			span := evs[len(evs)-1].P.Timestamp.Sub(evs[0].P.Timestamp) + time.Microsecond
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				e := &evs[i&(len(evs)-1)]
				if i&(len(evs)-1) == 0 && i > 0 {
					// Next lap: shift the stream in time so it stays in order.
					for j := range evs {
						evs[j].P.Timestamp = evs[j].P.Timestamp.Add(span)
					}
				}
				d.Seen(&e.P)
			}
		})
	}
}

func mustAddr(s string) netipAddr { return mustParse(s) }

// BenchmarkCheckPrint is the per-packet cost of the stage on unique packets
// (the common case, and the costlier one: a window inserts them) at the
// default configuration, with the fingerprint table (the default) and
// the paper's FBF (which tests its filters and inserts into two): 1 Mpps
// against a 50 ms window sized for it, the fingerprints computed
// beforehand.
func BenchmarkCheckPrint(b *testing.B) {
	for _, name := range []string{StructureTable, StructureFBF} {
		b.Run(name, func(b *testing.B) {
			d, err := New(Config{FBF: name == StructureFBF})
			if err != nil {
				b.Fatal(err)
			}
			const laps = 1 << 16
			r := rand.New(rand.NewPCG(4, 4))
			fps := make([]uint64, laps)
			for i := range fps {
				fps[i] = r.Uint64()
			}
			p := pkt()
			start := p.Timestamp
			var dups int
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i&15 == 0 { // 1 Mpps in bursts of 16, without a time.Add per packet
					p.Timestamp = start.Add(time.Duration(i) * time.Microsecond)
				}
				// XORing in the lap keeps every (random) fingerprint fresh.
				if d.CheckPrint(&p, fps[i&(laps-1)]^uint64(i/laps)*0x9e3779b97f4a7c15) == Duplicate {
					dups++
				}
			}
			b.ReportMetric(float64(dups)/float64(b.N), "dups/op")
		})
	}
}
