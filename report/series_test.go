package report

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/record"
)

// direct counts times into the buckets of g by their bounds, as the
// series should have.
func direct(times []int64, g grid) []uint64 {
	out := make([]uint64, g.used)
	for _, t := range times {
		i := (t - g.origin) >> g.shift
		if i < 0 || int(i) >= g.used {
			return nil
		}
		out[i]++
	}
	return out
}

// TestSeriesBuckets: however the times come (in order, jittered, earlier
// than the first, spanning microseconds or years), each bucket of the
// series holds the times within its bounds, no more than Buckets are
// used and the resolution is the finest that holds them.
func TestSeriesBuckets(t *testing.T) {
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	r := rand.New(rand.NewPCG(1, 2))
	cases := map[string]func(i int) int64{
		"in order, 30 s":   func(i int) int64 { return base + int64(i)*3_000_000 },
		"jittered":         func(i int) int64 { return base + int64(i)*1_000_000 + r.Int64N(50_000_000) - 25_000_000 },
		"backwards":        func(i int) int64 { return base - int64(i)*7_000_000 },
		"microseconds":     func(i int) int64 { return base + int64(i)*100 },
		"years apart":      func(i int) int64 { return base + int64(i%3)*365*24*3600*1e9 + int64(i) },
		"before the epoch": func(i int) int64 { return -base + int64(i)*1e9 },
		"random":           func(int) int64 { return base + r.Int64N(1e13) },
	}
	for name, gen := range cases {
		s := newSeries(addPacket)
		var times []int64
		for i := range 10_000 {
			ts := gen(i)
			times = append(times, ts)
			s.at(ts).Packets++
		}
		if s.g.used > Buckets || s.g.used == 0 {
			t.Fatalf("%s: %d buckets used", name, s.g.used)
		}
		want := direct(times, s.g)
		if want == nil {
			t.Fatalf("%s: a time outside the grid %+v", name, s.g)
		}
		for i, b := range s.buckets() {
			if b.Packets != want[i] {
				t.Fatalf("%s: bucket %d holds %d, its bounds %d", name, i, b.Packets, want[i])
			}
		}
		// The finest grid: one width finer would not hold the times.
		if s.g.shift > firstShift {
			lo, hi := times[0], times[0]
			for _, ts := range times {
				lo, hi = min(lo, ts), max(hi, ts)
			}
			if finer := s.g.shift - 1; (hi-floorTo(lo, finer))>>finer < Buckets {
				t.Errorf("%s: width 2^%d, but 2^%d holds the times", name, s.g.shift, finer)
			}
		}
	}
}

// TestSeriesMerge: the shards' series merged are the series of all the
// packets.
func TestSeriesMerge(t *testing.T) {
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	r := rand.New(rand.NewPCG(3, 4))
	all := newSeries(addPacket)
	shards := []series[PacketBucket]{newSeries(addPacket), newSeries(addPacket), newSeries(addPacket)}
	for i := range 20_000 {
		ts := base + r.Int64N(int64(1+i%3)*40e9) // the shards span different times
		all.at(ts).Packets++
		shards[i%3].at(ts).Packets++
	}
	merged := newSeries(addPacket)
	for i := range shards {
		merged.merge(&shards[i])
	}
	all.coarsen(cover(all.g.origin, all.g.end()-1, max(all.g.shift, merged.g.shift)))
	if merged.g != all.g {
		t.Fatalf("merged grid %+v, all %+v", merged.g, all.g)
	}
	for i := range all.buckets() {
		if merged.b[i] != all.b[i] {
			t.Fatalf("bucket %d: merged %+v, all %+v", i, merged.b[i], all.b[i])
		}
	}
}

// TestConsumerAllocs: the per-packet work allocates nothing, regrids
// included.
func TestConsumerAllocs(t *testing.T) {
	c := NewCollector(10)
	cons, err := c.Consumer()(0, 1, pipelineLookups())
	if err != nil {
		t.Fatal(err)
	}
	p := &capture.Packet{Timestamp: time.Unix(1_700_000_000, 0), WireLen: 100}
	ev := &acsm.Event{}
	var i int64
	n := testing.AllocsPerRun(10_000, func() {
		i++
		p.Timestamp = time.Unix(1_700_000_000, i*i*1000) // spans grow: regrids
		cons.Packet(p, ev)
	})
	if n != 0 {
		t.Errorf("%v allocations a packet", n)
	}
}

func BenchmarkConsumerPacket(b *testing.B) {
	c := NewCollector(10)
	cons, _ := c.Consumer()(0, 1, pipelineLookups())
	p := &capture.Packet{Timestamp: time.Unix(1_700_000_000, 0), WireLen: 100}
	ev := &acsm.Event{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		p.Timestamp = time.Unix(1_700_000_000, int64(i)*10_000)
		cons.Packet(p, ev)
	}
}

// TestFlowSpread: a kernel-kept flow's final record spreads its packets
// and bytes over the buckets of its life in proportion to their parts of
// it, the sums exact; a one-packet flow goes to its bucket; its start and
// interim records add nothing.
func TestFlowSpread(t *testing.T) {
	c := NewCollector(10)
	cons, err := c.Consumer()(1, 2, pipelineLookups())
	if err != nil {
		t.Fatal(err)
	}
	fc, ok := cons.(pipeline.FlowConsumer)
	if !ok {
		t.Fatal("the collector's consumer is not a pipeline.FlowConsumer")
	}
	s := cons.(*shardSeries)
	base := int64(1_700_000_000) * 1e9
	f := record.Flow{Start: base, End: base + 10e9, OrigPkts: 7000, RespPkts: 3001, OrigIPBytes: 5_000_000, RespIPBytes: 123_457}
	for _, k := range []record.EventKind{record.FlowStarted, record.FlowInterim} {
		fc.Flow(&record.Event{Kind: k, Flow: &f})
	}
	if s.s.g.used != 0 {
		t.Fatalf("a start or interim record counted: %d buckets", s.s.g.used)
	}
	fc.Flow(&record.Event{Kind: record.FlowEnded, Flow: &f})
	one := record.Flow{Start: base + 5e9, End: base + 5e9, OrigPkts: 1, OrigIPBytes: 40}
	fc.Flow(&record.Event{Kind: record.FlowEnded, Flow: &one})
	var pkts, bytes uint64
	g := s.s.g
	width := float64(int64(1) << g.shift)
	for i, b := range s.s.buckets() {
		pkts += b.Packets
		bytes += b.Bytes
		lo, hi := g.origin+int64(i)<<g.shift, g.origin+int64(i+1)<<g.shift
		if lo < f.Start || hi > f.End {
			continue // the first and last buckets hold parts
		}
		want := 10001 * width / 10e9
		if lo <= one.Start && one.Start < hi {
			want++
		}
		if d := float64(b.Packets) - want; d < -1 || d > 1 {
			t.Errorf("bucket %d: %d packets, want %.1f", i, b.Packets, want)
		}
	}
	if pkts != 10002 || bytes != 5_123_457+14*10001+40+14 {
		t.Errorf("%d packets, %d bytes: want 10002 and %d", pkts, bytes, 5_123_457+14*10001+40+14)
	}
}
