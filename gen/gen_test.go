package gen

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"testing"
	"time"
)

// testOptions is a small trace that still shows every scenario and state.
func testOptions() Options {
	o := DefaultOptions()
	o.Flows = 2500
	o.Duration = 20 * time.Second
	o.Seed = 7
	o.Mix = Mix{Normal: 0.95, SYNFlood: 0.02, Scan: 0.025, Heavy: 0.005}
	o.DupRate = 0.02
	o.IPv6Share = 0.2
	return o
}

func generate(t testing.TB, o Options) (pcap, truth []byte, st Stats) {
	t.Helper()
	var p, tr bytes.Buffer
	st, err := Generate(&p, &tr, o)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	return p.Bytes(), tr.Bytes(), st
}

func TestDeterministic(t *testing.T) {
	o := testOptions()
	o.Flows = 800
	p1, t1, _ := generate(t, o)
	p2, t2, _ := generate(t, o)
	if !bytes.Equal(p1, p2) || !bytes.Equal(t1, t2) {
		t.Fatal("same options and seed gave different output")
	}
	o.Seed++
	p3, _, _ := generate(t, o)
	if bytes.Equal(p1, p3) {
		t.Fatal("different seeds gave the same trace")
	}
}

func TestDefaultMixHasEveryConnState(t *testing.T) {
	o := DefaultOptions()
	o.Flows = 3000
	_, truth, st := generate(t, o)
	recs, err := ReadTruth(bytes.NewReader(truth))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range recs {
		seen[r.ConnState]++
	}
	for s := range NumConnStates {
		if seen[s.String()] == 0 || st.ConnStates[s] == 0 {
			t.Errorf("conn_state %s missing from a default-mix trace of %d flows", s, o.Flows)
		}
	}
	if int64(len(recs)) != st.Flows || st.Flows != int64(o.Flows) {
		t.Errorf("%d truth lines, %d flows in stats, want %d", len(recs), st.Flows, o.Flows)
	}
	t.Logf("states: %v", seen)
}

func TestTraceMatchesTruth(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Options)
	}{
		{"ethernet", func(*Options) {}},
		{"raw-ttl-change", func(o *Options) { o.Link, o.DupTTLChange, o.Seed = LinkRaw, true, 11 }},
		{"ipv6-udp-icmp", func(o *Options) { o.IPv6Share, o.UDPShare, o.ICMPShare, o.Flows, o.DupRate = 0.6, 0.3, 0.1, 1200, 0.1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions()
			tc.mod(&o)
			pcap, truthBytes, st := generate(t, o)
			recs, err := ReadTruth(bytes.NewReader(truthBytes))
			if err != nil {
				t.Fatal(err)
			}
			checkTruth(t, o, decodeTrace(t, pcap, o), recs, st)
		})
	}
}

func TestSnaplenTruncates(t *testing.T) {
	o := testOptions()
	o.Flows = 300
	full, _, _ := generate(t, o)
	o.Snaplen = 96 // enough for every header: Ethernet + IPv6 + TCP with options is 86
	cut, truth, st := generate(t, o)
	a, b := decodeTrace(t, full, Options{}), decodeTrace(t, cut, o)
	recs, err := ReadTruth(bytes.NewReader(truth))
	if err != nil {
		t.Fatal(err)
	}
	checkTruth(t, o, b, recs, st)
	if len(a) != len(b) {
		t.Fatalf("%d packets untruncated, %d truncated", len(a), len(b))
	}
	for i := range a {
		if a[i].us != b[i].us || a[i].wire != b[i].wire || !bytes.Equal(a[i].data[:len(b[i].data)], b[i].data) {
			t.Fatalf("packet %d differs from the untruncated trace's prefix", i)
		}
	}
	if hdr := binary.LittleEndian.Uint32(cut[16:]); hdr != 96 {
		t.Errorf("pcap header snaplen %d, want 96", hdr)
	}
	if st.CapturedBytes >= st.WireBytes {
		t.Errorf("captured %d of %d bytes", st.CapturedBytes, st.WireBytes)
	}
}

func TestPacketsTarget(t *testing.T) {
	o := testOptions()
	o.Flows, o.Packets = 0, 30000
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	var p Packet
	for g.Next(&p) {
	}
	st := g.Stats()
	if st.Packets < o.Packets {
		t.Fatalf("%d packets with %d flows, asked for at least %d", st.Packets, g.Flows(), o.Packets)
	}
	o.Packets, o.Flows = 0, g.Flows()-1
	_, _, fewer := generate(t, o)
	if fewer.Packets >= 30000 {
		t.Errorf("%d flows already give %d packets: %d is not the fewest", o.Flows, fewer.Packets, g.Flows())
	}
	t.Logf("%d flows give %d packets", g.Flows(), st.Packets)
}

func TestFlowStartsSpread(t *testing.T) {
	o := testOptions()
	o.Mix = Mix{Normal: 1}
	o.DupRate = 0
	_, truth, _ := generate(t, o)
	recs, err := ReadTruth(bytes.NewReader(truth))
	if err != nil {
		t.Fatal(err)
	}
	start := float64(DefaultStart.Unix())
	var bins [10]int
	for _, r := range recs {
		x := (r.TS - start) / o.Duration.Seconds()
		if x < 0 || x >= 1 {
			t.Fatalf("flow starts at %.6f, outside the window", r.TS-start)
		}
		bins[int(x*10)]++
	}
	// Starts are uniform: a chi-square test with 9 degrees of freedom
	// (critical value 27.88 at p = 0.001).
	exp := float64(len(recs)) / 10
	chi := 0.0
	for _, n := range bins {
		chi += (float64(n) - exp) * (float64(n) - exp) / exp
	}
	if chi > 27.88 {
		t.Errorf("flow starts not uniform: chi-square %.1f, bins %v", chi, bins)
	}
}

func TestTruthJSONRoundTrip(t *testing.T) {
	_, truth, _ := generate(t, testOptions())
	recs, err := ReadTruth(bytes.NewReader(truth))
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	for i := range recs {
		b = append(recs[i].AppendJSON(b), '\n')
	}
	if !bytes.Equal(b, truth) {
		t.Error("AppendJSON(ReadTruth(x)) != x")
	}
	if _, err := ReadTruth(bytes.NewReader([]byte("{\"orig_h\":\"10.0.0.1\"}\n{bad\n"))); err == nil {
		t.Error("ReadTruth accepted a broken line")
	}
}

func TestNextDoesNotAllocate(t *testing.T) {
	o := testOptions()
	o.Flows = MaxFlows / 8
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	var p Packet
	for range 300000 { // grow the flow pool and heap to the trace's concurrency
		g.Next(&p)
	}
	if n := testing.AllocsPerRun(20000, func() { g.Next(&p) }); n != 0 {
		t.Errorf("Next allocates %.2f times per packet", n)
	}
}

func BenchmarkNext(b *testing.B) {
	o := testOptions()
	o.Flows = MaxFlows / 8
	g, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	var p Packet
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if !g.Next(&p) {
			b.Fatal("trace ended")
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pkts/s")
}

func BenchmarkGenerate(b *testing.B) {
	o := testOptions()
	o.Flows = 5000
	var pkts int64
	b.ReportAllocs()
	for range b.N {
		st, err := Generate(io.Discard, io.Discard, o)
		if err != nil {
			b.Fatal(err)
		}
		pkts += st.Packets + st.Duplicates
	}
	b.ReportMetric(float64(pkts)/b.Elapsed().Seconds(), "pkts/s")
}

func ExampleGenerate() {
	o := DefaultOptions()
	o.Flows = 100
	var pcap, truth bytes.Buffer
	st, err := Generate(&pcap, &truth, o)
	if err != nil {
		panic(err)
	}
	fmt.Println(st.Flows, "flows")
	// Output: 100 flows
}
