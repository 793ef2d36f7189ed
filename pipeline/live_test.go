package pipeline

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/gen"
)

// part is a live source made of a file: the packets of the file numbered
// [from, to) (in file order) whose flow falls to shard `of` of `shards`
// (as AF_PACKET fanout would send a flow's packets to one socket).
type part struct {
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

func (p *part) Stats() *capture.Stats { return &p.stats }
func (p *part) Close() error          { return nil }

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
	srcs := make([]capture.Source, shards)
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
// add up to the whole run's. For each backend, on one and two shards.
func TestRestartKeepsFlows(t *testing.T) {
	trace := genTrace(t, gen.Options{Flows: 4000, Seed: 9, Duration: 10 * time.Second})
	r, err := capture.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	var pk capture.Packet
	total := 0
	for r.Next(&pk) == nil {
		total++
	}
	r.Close()
	for _, b := range []acsm.BackendKind{acsm.BackendDLeft, acsm.BackendExact, acsm.BackendKBF} {
		for _, shards := range []int{1, 2} {
			t.Run(b.String()+"/"+string(rune('0'+shards)), func(t *testing.T) {
				var whole bytes.Buffer
				ws, _ := runParts(t, liveConfig(b, &whole), trace, 0, -1, shards, "")
				snap := filepath.Join(t.TempDir(), "state.snap")
				var log bytes.Buffer
				s1, _ := runParts(t, liveConfig(b, &log), trace, 0, total/2, shards, snap)
				s2, rest := runParts(t, liveConfig(b, &log), trace, total/2, -1, shards, snap)
				if s1.SnapshotFlows == nil || *s1.SnapshotFlows == 0 || rest.OpenFlows != *s1.SnapshotFlows {
					t.Fatalf("saved %v open flows, restored %d", s1.SnapshotFlows, rest.OpenFlows)
				}
				if g, w := sortedLines(log.String()), sortedLines(whole.String()); !slices.Equal(g, w) {
					diff := 0
					for _, l := range g {
						if _, ok := slices.BinarySearch(w, l); !ok {
							diff++
						}
					}
					t.Errorf("records of the two runs: %d, of one run: %d; %d not in the one run's", len(g), len(w), diff)
				}
				states := maps.Clone(s1.ConnStates)
				for k, v := range s2.ConnStates {
					states[k] += v
				}
				if s1.Flows+s2.Flows != ws.Flows || !maps.Equal(states, ws.ConnStates) {
					t.Errorf("two runs: %d+%d flows, %v; one run: %d flows, %v", s1.Flows, s2.Flows, states, ws.Flows, ws.ConnStates)
				}
			})
		}
	}
}

// TestSnapshotRefused: a snapshot from a pipeline built otherwise, or a
// damaged one, is refused with a message saying why, and the pipeline
// runs empty; a missing one is ErrNoSnapshot.
func TestSnapshotRefused(t *testing.T) {
	trace := genTrace(t, gen.Options{Flows: 500, Seed: 4, Duration: 2 * time.Second})
	snap := filepath.Join(t.TempDir(), "state.snap")
	runParts(t, liveConfig(acsm.BackendDLeft, nil), trace, 0, 2000, 1, snap)
	build := func(cfg Config) *Pipeline {
		pl, err := NewLivePipeline(cfg, []capture.Source{openPart(t, trace, 2000, -1, 0, 1)})
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
}
