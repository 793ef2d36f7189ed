package pipeline

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/alerts"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/testutil/cputime"
	"github.com/flowmon/flowmon/pipeline/dedup"
	"github.com/flowmon/flowmon/pipeline/flowtable"
	"github.com/flowmon/flowmon/record/connlog"
	"github.com/flowmon/flowmon/rules"
)

// BenchmarkStages measures what each stage of a one-worker replay costs
// per packet of the trace FLOWMON_STAGES_PCAP (scripts/bench-stages.sh
// runs it with -benchtime 1x and sets the trace). Each stage's own code
// runs in its own loop over a batch of packets and is timed alone on the
// thread's CPU clock, so the figures are measured, not differences of
// whole runs, and their sum can be held against the whole replay's CPU
// time:
//
//   - read: capture.Reader.NextFrame over the file (a pass of its own);
//   - decode: capture.Decode and the reader's counts, of frames copied
//     out of the reader first (the copy is not timed);
//   - dedup: the fingerprint and the duplicate window's check;
//   - handoff: the copy of each packet into the shard's batch;
//   - flowstate: the ACSM, the flow table and what the flow table does
//     for the flow counter and the records (a flow's window count, its
//     record's fields), in shard.run's order with its prefetches;
//   - rotate: the flow counter's window ends (flushCounts, Rotate);
//   - rules: the default rules (the consumers, and the duplicates they
//     count);
//   - records: the conn.log encoding and its writes to a file;
//   - setup and finish: building the stages, and the end of the run
//     (open flows' records, the ACSM's and counter's last flushes).
//
// The sub-benchmarks "counter=off" and "counter=off,records=off" run the
// same with the flow table writing nothing to the flow counter, and
// without records: their flowstate figures split the one above into the
// ACSM and flow table alone, the records' fields and the counter's
// counts (those two by difference; the script says which).
func BenchmarkStages(b *testing.B) {
	name := os.Getenv("FLOWMON_STAGES_PCAP")
	if name == "" {
		b.Skip("FLOWMON_STAGES_PCAP names no trace (make bench-stages sets it)")
	}
	b.Run("read", func(b *testing.B) { benchRead(b, name) })
	for _, v := range []struct {
		name             string
		counter, records bool
	}{
		{"all", true, true},
		{"counter=off", false, true},
		{"counter=off,records=off", false, false},
	} {
		b.Run(v.name, func(b *testing.B) { benchStages(b, name, v.counter, v.records) })
	}
}

// clockCost is the cost of one read of the thread's CPU clock, taken off
// each timed span.
func clockCost() time.Duration {
	const n = 10000
	t0 := cputime.Thread()
	for range n {
		cputime.Thread()
	}
	return (cputime.Thread() - t0) / n
}

func benchRead(b *testing.B, name string) {
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var spent time.Duration
	var frames uint64
	for b.Loop() {
		t0 := cputime.Thread()
		r, err := capture.Open(name)
		if err != nil {
			b.Fatal(err)
		}
		var f capture.Frame
		for {
			if err := r.NextFrame(&f); err != nil {
				if !errors.Is(err, io.EOF) {
					b.Fatal(err)
				}
				break
			}
			frames++
		}
		r.Close()
		spent += cputime.Thread() - t0
	}
	b.ReportMetric(float64(frames)/float64(b.N), "pkts")
	b.ReportMetric(float64(spent.Nanoseconds())/float64(frames), "read-ns/pkt")
}

// stageClock adds the thread CPU time since its last mark to a stage.
type stageClock struct {
	last, cost time.Duration
}

func (c *stageClock) mark(to *time.Duration) {
	now := cputime.Thread()
	if to != nil {
		*to += now - c.last - c.cost
	}
	c.last = now
}

// stageTimes are the stages' CPU times over a run.
type stageTimes struct {
	setup, decode, dedup, handoff, flowstate, rotate, rules, records, finish time.Duration
}

func benchStages(b *testing.B, name string, counter, records bool) {
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var st stageTimes
	var frames uint64
	clk := stageClock{cost: clockCost()}
	dir := b.TempDir()
	for b.Loop() {
		frames += stagesPass(b, name, filepath.Join(dir, "flows.jsonl"), counter, records, &clk, &st)
	}
	b.ReportMetric(float64(frames)/float64(b.N), "pkts")
	for _, m := range []struct {
		d    time.Duration
		unit string
	}{
		{st.setup, "setup"}, {st.decode, "decode"}, {st.dedup, "dedup"}, {st.handoff, "handoff"},
		{st.flowstate, "flowstate"}, {st.rotate, "rotate"}, {st.rules, "rules"}, {st.records, "records"},
		{st.finish, "finish"},
	} {
		b.ReportMetric(float64(m.d.Nanoseconds())/float64(frames), m.unit+"-ns/pkt")
	}
}

// stagesPass runs the trace once through one worker's stages, each timed
// into st, and returns the frames read.
func stagesPass(b *testing.B, name, flowsOut string, counter, records bool, clk *stageClock, st *stageTimes) uint64 {
	clk.mark(nil)
	cfg := DefaultConfig()
	cfg.Workers = 1
	set, err := rules.Default()
	if err != nil {
		b.Fatal(err)
	}
	attachRules(&cfg, rules.NewEngine(set, alerts.NewManager(alerts.ManagerOptions{}, alerts.NewWriterSink("discard", io.Discard, alerts.FormatJSON))))
	var out *recordOut
	var sink *connlog.Writer
	if records {
		f, err := os.Create(flowsOut)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		// Held for the records stage below (no sink set: sinks nil
		// keeps them in out.flows), which writes them as the sink does.
		out = newRecordOut(nil)
		sink = connlog.NewWriter(f)
	}
	s, err := newShard(cfg, 0, 1, out)
	if err != nil {
		b.Fatal(err)
	}
	if !counter {
		s.flows.Finish()
		fc := flowTableConfig(cfg, 1, s, out)
		fc.Counter = nil
		s.flows = flowtable.New(fc)
	}
	fpBytes := cfg.Dedup.WithDefaults().PayloadBytes
	r, err := capture.Open(name)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	var (
		pk    = make([]capture.Packet, batchSize)
		fp    = make([]uint64, batchSize)
		verd  = make([]dedup.Verdict, batchSize)
		evs   = make([]acsm.Event, batchSize)
		frs   = make([]capture.Frame, batchSize)
		offs  = make([]int, batchSize+1)
		arena []byte
		bt    = new(batch)
		stats capture.Stats
		seq   uint64
		end   time.Time
		f     capture.Frame
	)
	writeRecords := func() {
		if out == nil {
			return
		}
		for i := 0; i < len(out.flows); i += recordBatch {
			if err := sink.WriteFlows(out.flows[i:min(i+recordBatch, len(out.flows))]); err != nil {
				b.Fatal(err)
			}
		}
		out.flows, out.seqs = out.flows[:0], out.seqs[:0]
	}
	clk.mark(&st.setup)
	for eof := false; !eof; {
		// A batch of frames, copied out of the reader's buffer (not timed:
		// the read pass times the reading).
		n := 0
		arena = arena[:0]
		for n < batchSize {
			if err := r.NextFrame(&f); err != nil {
				if !errors.Is(err, io.EOF) {
					b.Fatal(err)
				}
				eof = true
				break
			}
			offs[n] = len(arena)
			arena = append(arena, f.Data...)
			frs[n] = f
			n++
		}
		offs[n] = len(arena)
		for i := range n {
			frs[i].Data = arena[offs[i]:offs[i+1]]
		}
		clk.mark(nil)

		m := 0
		for i := range n {
			fr := &frs[i]
			reason := capture.Decode(&pk[m], fr.Link, fr.Data, fr.Wire, fr.Time)
			stats.Count(&pk[m], reason)
			if reason == capture.ReasonNone {
				m++
			}
		}
		clk.mark(&st.decode)

		for i := range m {
			fp[i] = dedup.Fingerprint(&pk[i], fpBytes)
		}
		clk.mark(&st.dedup)

		for i := range m {
			bt.add(&pk[i], fp[i], seq)
			seq++
		}
		clk.mark(&st.handoff)

		for i := range min(m, prefetchAhead) {
			s.dedup.Prefetch(bt.fp[i])
		}
		for i := range m {
			if j := i + prefetchAhead; j < m {
				s.dedup.Prefetch(bt.fp[j])
			}
			verd[i] = s.dedup.CheckPrint(&bt.pkts[i], bt.fp[i])
			switch verd[i] {
			case dedup.Duplicate:
				s.counts.duplicates++
				continue
			case dedup.Retransmission:
				s.counts.retransmissions++
			}
			s.counts.unique++
		}
		clk.mark(&st.dedup)

		// shard.run and shard.packet without dedup and the consumers.
		for i := range min(m, 2*prefetchAhead) {
			s.flows.PrefetchHome(bt.pkts[i].Hash)
		}
		for i := range min(m, prefetchAhead) {
			p := &bt.pkts[i]
			s.tracker.Prefetch(p.Hash)
			s.flows.PrefetchFlow(p.Hash, flowtable.OpensHandshake(p))
		}
		for i := range m {
			if j := i + 2*prefetchAhead; j < m {
				s.flows.PrefetchHome(bt.pkts[j].Hash)
			}
			if j := i + prefetchAhead; j < m {
				p := &bt.pkts[j]
				s.tracker.Prefetch(p.Hash)
				s.flows.PrefetchFlow(p.Hash, flowtable.OpensHandshake(p))
			}
			if verd[i] == dedup.Duplicate {
				continue
			}
			p := &bt.pkts[i]
			if out != nil {
				out.seq = bt.seq[i]
			}
			s.flows.SetParent(0)
			if p.Tunnels > 0 {
				s.carriers(p)
			}
			s.tracker.ObserveInto(p, &evs[i])
			if counter && s.counter.Due(p.Timestamp) {
				clk.mark(&st.flowstate)
				s.rotate(p.Timestamp)
				clk.mark(&st.rotate)
			}
			s.flows.Packet(p, &evs[i])
			if p.Timestamp.After(end) {
				end = p.Timestamp
			}
		}
		clk.mark(&st.flowstate)

		for i := range m {
			p := &bt.pkts[i]
			if verd[i] == dedup.Duplicate {
				for _, c := range s.dupConsumers {
					c.Duplicate(p)
				}
				continue
			}
			for _, c := range s.consumers {
				c.Packet(p, &evs[i])
			}
		}
		clk.mark(&st.rules)

		writeRecords()
		bt.empty()
		clk.mark(&st.records)
	}

	// Finish's part for one shard.
	s.dedup.Publish()
	s.flows.Finish()
	for _, c := range s.consumers {
		if err := c.Finish(end); err != nil {
			b.Fatal(err)
		}
	}
	s.tracker.Flush(end)
	s.counter.Flush()
	clk.mark(&st.finish)
	writeRecords()
	clk.mark(&st.records)
	if seq == 0 || s.counts.unique == 0 {
		b.Fatal("no packet went through the stages")
	}
	return stats.Packets
}
