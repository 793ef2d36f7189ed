package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/kbf"
	"github.com/flowmon/flowmon/pipeline/dedup"
	"github.com/flowmon/flowmon/record"
	"github.com/flowmon/flowmon/record/connlog"
)

type truthFlow struct {
	OrigH     netip.Addr `json:"orig_h"`
	OrigP     uint16     `json:"orig_p"`
	RespH     netip.Addr `json:"resp_h"`
	RespP     uint16     `json:"resp_p"`
	Proto     string     `json:"proto"`
	ConnState string     `json:"conn_state"`
	OrigPkts  uint64     `json:"orig_pkts"`
	RespPkts  uint64     `json:"resp_pkts"`
	DupPkts   uint64     `json:"dup_pkts"`
}

func (f truthFlow) id() string {
	return fmt.Sprintf("%s %s:%d %s:%d", zeekProto(f.Proto), f.OrigH, f.OrigP, f.RespH, f.RespP)
}

// connLog is a conn.log JSON lines sink writing to w (none for nil).
func connLog(w io.Writer) []record.Named {
	if w == nil {
		return nil
	}
	return []record.Named{{Name: "connlog", Sink: connlog.NewWriter(w)}}
}

func readJSONLines[T any](t *testing.T, data []byte) []T {
	var out []T
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		out = append(out, v)
	}
	return out
}

// TestReplaySampleAgainstTruth replays the bundled generated trace and
// compares every flow record with the generator's ground truth.
func TestReplaySampleAgainstTruth(t *testing.T) {
	raw, err := os.ReadFile("../pcaps/sample.truth.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	truth := map[string]truthFlow{}
	var dups uint64
	for _, f := range readJSONLines[truthFlow](t, raw) {
		truth[f.id()] = f
		dups += f.DupPkts
	}
	for _, c := range []struct {
		backend acsm.BackendKind
		layout  kbf.LayoutKind
		fbf     bool // the dedup window an FBF instead of the table
	}{{acsm.BackendExact, kbf.Standard, false}, {acsm.BackendExact, kbf.Standard, true},
		{acsm.BackendKBF, kbf.Standard, false}, {acsm.BackendKBF, kbf.Blocked, false}} {
		backend := c.backend
		window := dedup.StructureTable
		if c.fbf {
			window = dedup.StructureFBF
		}
		t.Run(backend.String()+"/"+c.layout.String()+"/"+window, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Dedup.FBF = c.fbf
			cfg.ACSM.Backend = backend
			cfg.ACSM.KBFLayout = c.layout
			cfg.ACSM.Capacity = 4096
			cfg.FlowCount.ExpectedFlows = 4096
			var log bytes.Buffer
			cfg.Sinks = connLog(&log)
			s, err := Replay(context.Background(), []string{"../pcaps/sample.pcap"}, ReplayOptions{Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			recs := readJSONLines[connlog.Record](t, log.Bytes())
			if len(recs) != len(truth) || s.Flows != uint64(len(truth)) {
				t.Fatalf("%d records, %d flows; truth has %d", len(recs), s.Flows, len(truth))
			}
			var stateOK, countOK int
			for _, r := range recs {
				id := fmt.Sprintf("%s %s:%d %s:%d", r.Proto, r.OrigH, r.OrigP, r.RespH, r.RespP)
				tf, ok := truth[id]
				if !ok {
					t.Errorf("record for a flow the truth does not have (or the wrong originator): %s", id)
					continue
				}
				if r.ConnState == tf.ConnState {
					stateOK++
				} else {
					t.Logf("%s: conn_state %s, truth %s", id, r.ConnState, tf.ConnState)
				}
				if r.OrigPkts == tf.OrigPkts && r.RespPkts == tf.RespPkts {
					countOK++
				}
			}
			share := float64(stateOK) / float64(len(truth))
			t.Logf("%s: conn_state agrees for %d/%d flows, packet counts for %d/%d; %d duplicates dropped",
				backend, stateOK, len(truth), countOK, len(truth), s.Duplicates)
			if share < 0.999 {
				t.Errorf("conn_state agreement %.4f < 0.999", share)
			}
			// Dedup makes packet counts exactly-once, with either window.
			if s.DedupWindow != window {
				t.Errorf("summary's dedup window %q, want %q", s.DedupWindow, window)
			}
			if countOK != len(truth) || s.Duplicates != dups {
				t.Errorf("packet counts right for %d/%d flows, %d duplicates dropped (truth %d)", countOK, len(truth), s.Duplicates, dups)
			}
			var sum uint64
			for _, n := range s.ConnStates {
				sum += n
			}
			if sum != s.Flows {
				t.Errorf("conn_states sum to %d, flows %d", sum, s.Flows)
			}
		})
	}
}

// replaySample replays the bundled sample with the exact backend on the
// given number of workers and returns the summary and the flow log.
func replaySample(t *testing.T, workers int) (*Summary, string) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ACSM.Backend = acsm.BackendExact
	cfg.ACSM.Capacity, cfg.FlowCount.ExpectedFlows = 4096, 4096
	cfg.Workers = workers
	var log bytes.Buffer
	cfg.Sinks = connLog(&log)
	s, err := Replay(context.Background(), []string{"../pcaps/sample.pcap"}, ReplayOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return s, log.String()
}

// sortedLines is a flow log's records in sorted order.
func sortedLines(log string) []string {
	l := strings.Split(strings.TrimSpace(log), "\n")
	slices.Sort(l)
	return l
}

// TestWorkersGiveTheSameResult replays the sample on one and on three
// shards: the summary's counts and the set of flow records must agree.
func TestWorkersGiveTheSameResult(t *testing.T) {
	s1, log1 := replaySample(t, 1)
	s3, log3 := replaySample(t, 3)
	if s1.Flows != s3.Flows || s1.UniquePackets != s3.UniquePackets || !maps.Equal(s1.ConnStates, s3.ConnStates) ||
		s1.ACSM.NewFlows != s3.ACSM.NewFlows || s3.Workers != 3 {
		t.Errorf("1 worker: %d flows %v; 3 workers: %d flows %v", s1.Flows, s1.ConnStates, s3.Flows, s3.ConnStates)
	}
	if l1, l3 := sortedLines(log1), sortedLines(log3); !slices.Equal(l1, l3) {
		t.Errorf("flow records differ: %d vs %d lines", len(l1), len(l3))
	}
}

// TestFlowLogIsReproducible replays the sample three times on three
// workers, merging the shards' records every 64 packets, and three times
// merging them whenever a shard holds 4 (whose merge points depend on how
// the workers keep up): the logs must be byte-identical, and hold the
// records one worker writes.
func TestFlowLogIsReproducible(t *testing.T) {
	defer func(n uint64, m int64) { logSyncEvery, recordSyncAt = n, m }(logSyncEvery, recordSyncAt)
	logSyncEvery = 64
	_, first := replaySample(t, 3)
	logSyncEvery, recordSyncAt = 1<<40, 4
	for i := 0; i < 3; i++ {
		if _, again := replaySample(t, 3); again != first {
			t.Fatalf("merging every 4 records: run %d wrote another log (%d bytes, first run %d)", i+1, len(again), len(first))
		}
	}
	logSyncEvery, recordSyncAt = 64, 1<<40
	for i := 0; i < 2; i++ {
		if _, again := replaySample(t, 3); again != first {
			t.Fatalf("run %d wrote another log (%d bytes, first run %d)", i+2, len(again), len(first))
		}
	}
	_, log1 := replaySample(t, 1)
	if one := sortedLines(log1); !slices.Equal(sortedLines(first), one) || len(one) != 300 {
		t.Errorf("3 workers wrote other records than 1 (%d lines)", len(one))
	}
}

// TestSummaryWithoutFlowLog: without a flow log the flow table keeps only
// a flow's first line (key, state, uid), and the summary must be the one
// a replay writing records gives, on a generated trace whose flows end,
// time out and hit the table's cap.
func TestSummaryWithoutFlowLog(t *testing.T) {
	trace := genTrace(t, gen.Options{Flows: 20_000, Seed: 5, Duration: 20 * time.Second})
	run := func(log io.Writer) *Summary {
		cfg := DefaultConfig()
		cfg.Workers = 1
		cfg.ACSM.Capacity, cfg.FlowCount.ExpectedFlows, cfg.MaxFlows = 4096, 4096, 4096
		cfg.Sinks = connLog(log)
		s, err := Replay(context.Background(), []string{trace}, ReplayOptions{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	with, without := run(io.Discard), run(nil)
	if with.Flows != without.Flows || with.FlowsTimedOut != without.FlowsTimedOut || with.FlowsAtCap != without.FlowsAtCap ||
		!maps.Equal(with.ConnStates, without.ConnStates) {
		t.Errorf("with a flow log: %d flows, %d timed out (%d at the cap), %v\nwithout: %d flows, %d timed out (%d at the cap), %v",
			with.Flows, with.FlowsTimedOut, with.FlowsAtCap, with.ConnStates,
			without.Flows, without.FlowsTimedOut, without.FlowsAtCap, without.ConnStates)
	}
	if with.FlowsAtCap == 0 {
		t.Errorf("the table never reached its cap of 4096: the test does not cover it")
	}
}

// genTrace writes the trace o describes into the test's temp dir and
// returns its name.
func genTrace(t *testing.T, o gen.Options) string {
	t.Helper()
	g, err := gen.New(o)
	if err != nil {
		t.Fatal(err)
	}
	name := t.TempDir() + "/g.pcap"
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.WriteTo(f, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return name
}
