package pipeline

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/record/connlog"
)

// part is a live source made of a file: the packets of the file numbered
// [from, to) (in file order) whose flow falls to shard `of` of `shards`
// (as AF_PACKET fanout would send a flow's packets to one socket).
type part struct {
	capture.NoIface
	r         *capture.Reader
	n         int
	from, to  int
	shard, of int
	stats     capture.Stats
}

func openPart(t *testing.T, name string, from, to, shard, of int) *part {
	t.Helper()
	r, err := capture.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return &part{r: r, from: from, to: to, shard: shard, of: of}
}

func (p *part) Next(pk *capture.Packet) error {
	for {
		if p.to >= 0 && p.n >= p.to {
			return io.EOF
		}
		if err := p.r.Next(pk); err != nil {
			return err
		}
		p.n++
		if p.n <= p.from || shardOf(pk.Hash, p.of) != p.shard {
			continue
		}
		p.stats.Count(pk, capture.ReasonNone)
		return nil
	}
}

func (p *part) Stats() *capture.Stats                    { return &p.stats }
func (p *part) Close() error                             { return nil }
func (p *part) SetDecodeOptions(o capture.DecodeOptions) { p.r.SetDecodeOptions(o) }

// tracePackets counts the packets of the file trace.
func tracePackets(t *testing.T, trace string) int {
	t.Helper()
	r, err := capture.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var pk capture.Packet
	n := 0
	for r.Next(&pk) == nil {
		n++
	}
	return n
}

// liveConfig is a small pipeline writing its flow records to log.
func liveConfig(backend acsm.BackendKind, log io.Writer) Config {
	cfg := DefaultConfig()
	cfg.ACSM.Backend = backend
	cfg.ACSM.Capacity, cfg.FlowCount.ExpectedFlows, cfg.MaxFlows = 1<<14, 1<<14, 1<<14
	cfg.Sinks = connLog(log)
	return cfg
}

// runParts runs a live pipeline whose shard i reads the packets
// [from, to) of trace that fall to it, restoring and saving the snapshot
// at snap when set.
func runParts(t *testing.T, cfg Config, trace string, from, to, shards int, snap string) (*Summary, Restored) {
	t.Helper()
	srcs := make([]capture.LiveSource, shards)
	for i := range srcs {
		srcs[i] = openPart(t, trace, from, to, i, shards)
	}
	pl, err := NewLivePipeline(cfg, srcs)
	if err != nil {
		t.Fatal(err)
	}
	var r Restored
	if snap != "" && from > 0 {
		if r, err = pl.RestoreSnapshot(snap, time.Hour, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	var save string
	if to >= 0 {
		save = snap // a run that stops before the trace's end saves
	}
	s, err := RunLive(context.Background(), pl, LiveOptions{Snapshot: save})
	if err != nil {
		t.Fatal(err)
	}
	return s, r
}

// TestLiveMatchesReplay: a live pipeline fed by one source per shard,
// each holding its flows' packets, gives the replay's summary and records.
func TestLiveMatchesReplay(t *testing.T) {
	trace := genTrace(t, gen.Options{Flows: 5000, Seed: 3, Duration: 10 * time.Second})
	var want bytes.Buffer
	cfg := liveConfig(acsm.BackendExact, &want)
	cfg.Workers = 1
	ws, err := Replay(context.Background(), []string{trace}, ReplayOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	for _, shards := range []int{1, 2} {
		var got bytes.Buffer
		s, _ := runParts(t, liveConfig(acsm.BackendExact, &got), trace, 0, -1, shards, "")
		if s.Packets != ws.Packets || s.Flows != ws.Flows || s.Duplicates != ws.Duplicates ||
			!maps.Equal(s.ConnStates, ws.ConnStates) || s.Workers != shards {
			t.Errorf("%d shards: %d packets, %d flows, %d duplicates, %v; replay: %d, %d, %d, %v", shards,
				s.Packets, s.Flows, s.Duplicates, s.ConnStates, ws.Packets, ws.Flows, ws.Duplicates, ws.ConnStates)
		}
		if g, w := sortedLines(got.String()), sortedLines(want.String()); !slices.Equal(g, w) {
			t.Errorf("%d shards: %d records, replay %d", shards, len(g), len(w))
		}
	}
}

// TestRestartKeepsFlows stops a live run in the middle of a trace with a
// snapshot and runs the rest from it: the two runs' records together are
// the records of one run through the whole trace, so every flow spanning
// the restart kept its state, history and counts; and the two summaries
// add up to the whole run's. The one difference is the stop's: a flow
// that ended within its linger before it is written by the first run
// without the stragglers that come after, which the second run counts as
// a new flow on the 5-tuple (stopSplits). For each backend, on one and
// two shards.
func TestRestartKeepsFlows(t *testing.T) {
	trace := genTrace(t, gen.Options{Flows: 4000, Seed: 9, Duration: 10 * time.Second})
	total := tracePackets(t, trace)
	for _, b := range []acsm.BackendKind{acsm.BackendDLeft, acsm.BackendExact, acsm.BackendKBF} {
		for _, shards := range []int{1, 2} {
			t.Run(b.String()+"/"+string(rune('0'+shards)), func(t *testing.T) {
				var whole bytes.Buffer
				ws, _ := runParts(t, liveConfig(b, &whole), trace, 0, -1, shards, "")
				snap := filepath.Join(t.TempDir(), "state.snap")
				var log bytes.Buffer
				s1, _ := runParts(t, liveConfig(b, &log), trace, 0, total/2, shards, snap)
				n1 := log.Len()
				s2, rest := runParts(t, liveConfig(b, &log), trace, total/2, -1, shards, snap)
				if s1.SnapshotFlows == nil || *s1.SnapshotFlows == 0 || rest.OpenFlows != *s1.SnapshotFlows {
					t.Fatalf("saved %v open flows, restored %d", s1.SnapshotFlows, rest.OpenFlows)
				}
				extra := stopSplits(t, whole.Bytes(), log.Bytes()[:n1], log.Bytes()[n1:])
				states := maps.Clone(s1.ConnStates)
				for k, v := range s2.ConnStates {
					states[k] += v
				}
				for k, v := range extra {
					if states[k] -= v; states[k] == 0 {
						delete(states, k)
					}
				}
				var nExtra uint64
				for _, v := range extra {
					nExtra += v
				}
				if s1.Flows+s2.Flows-nExtra != ws.Flows || !maps.Equal(states, ws.ConnStates) {
					t.Errorf("two runs: %d+%d flows less %d stragglers', %v; one run: %d flows, %v",
						s1.Flows, s2.Flows, nExtra, states, ws.Flows, ws.ConnStates)
				}
			})
		}
	}
}

// stopSplits compares the records of one run through a trace with those
// of two runs split by a stop with a snapshot, and returns the flows the
// second run has that the one run has not, by conn_state. Every record of
// the one run is in the two runs' once, the same but for flows that had
// ended by the stop: the first run writes those (same uid, 5-tuple and
// conn_state) without their stragglers, and the second run's flows that
// the one run has not are on those flows' 5-tuples.
func stopSplits(t *testing.T, whole, first, second []byte) map[string]uint64 {
	t.Helper()
	type tuple struct {
		o, r   netip.Addr
		op, rp uint16
		proto  string
	}
	key := func(r *connlog.Record) tuple {
		k := tuple{r.OrigH, r.RespH, r.OrigP, r.RespP, r.Proto}
		if k.r.Less(k.o) || k.r == k.o && k.rp < k.op {
			k.o, k.r, k.op, k.rp = k.r, k.o, k.rp, k.op
		}
		return k
	}
	one := map[string]connlog.Record{}
	lines := map[string]bool{}
	for _, r := range readJSONLines[connlog.Record](t, whole) {
		one[r.UID] = r
	}
	for _, l := range strings.Split(strings.TrimSpace(string(whole)), "\n") {
		lines[l] = true
	}
	seen := map[string]int{}
	cut := map[tuple]bool{}
	var unknown []connlog.Record
	for i, part := range [][]byte{first, second} {
		recs := readJSONLines[connlog.Record](t, part)
		for j, l := range strings.Split(strings.TrimSpace(string(part)), "\n") {
			if l == "" {
				continue
			}
			r := recs[j]
			seen[r.UID]++
			w, ok := one[r.UID]
			switch {
			case lines[l]:
			case !ok:
				unknown = append(unknown, r)
			case i == 0 && key(&w) == key(&r) && w.ConnState == r.ConnState &&
				r.OrigPkts+r.RespPkts < w.OrigPkts+w.RespPkts:
				cut[key(&r)] = true
			default:
				t.Errorf("run %d's record differs from the one run's:\n%s\n%+v", i+1, l, w)
			}
		}
	}
	for uid := range one {
		if seen[uid] != 1 {
			t.Errorf("flow %s: %d records in the two runs, 1 in the one run", uid, seen[uid])
		}
	}
	extra := map[string]uint64{}
	for _, r := range unknown {
		if !cut[key(&r)] {
			t.Errorf("a record of the two runs that the one run has not, on no flow the stop ended: %+v", r)
		}
		extra[r.ConnState]++
	}
	t.Logf("%d flows written at the stop without their stragglers, %d new flows of stragglers", len(cut), len(unknown))
	return extra
}

// TestSnapshotRefused: a snapshot from a pipeline built otherwise, or a
// damaged one, is refused with a message saying why, and the pipeline
// runs empty; a missing one is ErrNoSnapshot.
func TestSnapshotRefused(t *testing.T) {
	trace := genTrace(t, gen.Options{Flows: 500, Seed: 4, Duration: 2 * time.Second})
	snap := filepath.Join(t.TempDir(), "state.snap")
	runParts(t, liveConfig(acsm.BackendDLeft, nil), trace, 0, 2000, 1, snap)
	build := func(cfg Config) *Pipeline {
		pl, err := NewLivePipeline(cfg, []capture.LiveSource{openPart(t, trace, 2000, -1, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}
	other := liveConfig(acsm.BackendDLeft, nil)
	other.MaxFlows *= 2
	if _, err := build(other).RestoreSnapshot(snap, time.Hour, time.Now()); err == nil || !strings.Contains(err.Error(), "max-flows") {
		t.Errorf("restore into another max-flows: %v", err)
	}
	if _, err := build(liveConfig(acsm.BackendDLeft, nil)).RestoreSnapshot(snap, time.Second, time.Now().Add(time.Hour)); err == nil {
		t.Errorf("a snapshot an hour old with max-age 1s was restored")
	}
	data, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x40
	bad := snap + ".bad"
	if err := os.WriteFile(bad, data, 0o600); err != nil {
		t.Fatal(err)
	}
	pl := build(liveConfig(acsm.BackendDLeft, nil))
	if _, err := pl.RestoreSnapshot(bad, time.Hour, time.Now()); err == nil {
		t.Errorf("a damaged snapshot was restored")
	}
	if _, err := pl.RestoreSnapshot(snap+".none", time.Hour, time.Now()); !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("missing snapshot: %v, want ErrNoSnapshot", err)
	}
	if s, err := RunLive(context.Background(), pl, LiveOptions{}); err != nil || s.Packets == 0 || s.RestoredFlows != nil {
		t.Errorf("after refusals the pipeline ran: %v, %+v", err, s)
	}
	// The start's outcome is a metric: one refusal, one missing file.
	reg := prometheus.NewRegistry()
	if err := pl.Register(reg); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "flowmon_snapshot_restores_total" {
			for _, m := range f.GetMetric() {
				got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	if want := map[string]float64{"restored": 0, "none": 1, "refused": 1}; !maps.Equal(got, want) {
		t.Errorf("flowmon_snapshot_restores_total %v, want %v", got, want)
	}
}

// TestStopWritesEndedFlows stops a live run with a snapshot while flows
// that ended within their linger are waiting for stragglers: the stop
// writes their records, before the snapshot's mark, so the run's log has
// a record for every flow it counts but the open ones the snapshot
// carries, and the summary counts them; the next run, restored from the
// snapshot, writes none of them again.
func TestStopWritesEndedFlows(t *testing.T) {
	trace := genTrace(t, gen.Options{Flows: 2000, Seed: 12, Duration: 4 * time.Second})
	total := tracePackets(t, trace)
	for _, b := range []acsm.BackendKind{acsm.BackendDLeft, acsm.BackendExact} {
		for _, shards := range []int{1, 2} {
			t.Run(b.String()+"/"+string(rune('0'+shards)), func(t *testing.T) {
				snap := filepath.Join(t.TempDir(), "state.snap")
				var log bytes.Buffer
				srcs := make([]capture.LiveSource, shards)
				for i := range srcs {
					srcs[i] = openPart(t, trace, 0, total/2, i, shards)
				}
				pl, err := NewLivePipeline(liveConfig(b, &log), srcs)
				if err != nil {
					t.Fatal(err)
				}
				marked := -1
				mark := func() ([]byte, error) { marked = log.Len(); return nil, nil }
				s1, err := RunLive(context.Background(), pl, LiveOptions{Snapshot: snap, Mark: mark})
				if err != nil {
					t.Fatal(err)
				}
				recs1 := readJSONLines[connlog.Record](t, log.Bytes())
				// The carried open flows are the next run's to count.
				if uint64(len(recs1)) != s1.Flows || s1.Records["connlog"].Written != s1.Flows {
					t.Errorf("first run: %d flows, %d carried open; %d records in its log, %d counted written",
						s1.Flows, *s1.SnapshotFlows, len(recs1), s1.Records["connlog"].Written)
				}
				var states uint64
				for _, n := range s1.ConnStates {
					states += n
				}
				if states != s1.Flows {
					t.Errorf("first run: %d flows by conn_state, %d flows", states, s1.Flows)
				}
				if marked != log.Len() {
					t.Errorf("the snapshot's mark is at %d bytes of the log, the run wrote %d", marked, log.Len())
				}

				n1 := log.Len()
				srcs2 := make([]capture.LiveSource, shards)
				for i := range srcs2 {
					srcs2[i] = openPart(t, trace, total/2, -1, i, shards)
				}
				pl2, err := NewLivePipeline(liveConfig(b, &log), srcs2)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := pl2.RestoreSnapshot(snap, time.Hour, time.Now()); err != nil {
					t.Fatal(err)
				}
				if _, err := RunLive(context.Background(), pl2, LiveOptions{}); err != nil {
					t.Fatal(err)
				}
				first := map[string]bool{}
				for _, r := range recs1 {
					first[r.UID] = true
				}
				again := 0
				for _, r := range readJSONLines[connlog.Record](t, log.Bytes()[n1:]) {
					if first[r.UID] {
						again++
					}
				}
				if again > 0 {
					t.Errorf("the restored run wrote %d records of flows the first run wrote", again)
				}
				t.Logf("first run: %d flows, %d records, %d carried open", s1.Flows, len(recs1), *s1.SnapshotFlows)
			})
		}
	}
}
