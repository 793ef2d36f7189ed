package pipeline

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/record"
)

// flaky is a sink that fails the calls from fail to fail+n-1 (counted
// from 1) and takes the others.
type flaky struct {
	calls, fail, n int
	got            int
}

var errFlaky = errors.New("disk full")

func (f *flaky) WriteFlows(flows []record.Flow) error {
	f.calls++
	if f.calls >= f.fail && f.calls < f.fail+f.n {
		return errFlaky
	}
	f.got += len(flows)
	return nil
}

func (f *flaky) Flush() error { return nil }

// TestSinkFailureReported: a sink that fails for a while is logged when
// it starts failing and when it recovers, once each, its lost records are
// counted in the metrics as they happen, the records after go on to it,
// and the replay's error names it; a healthy sink beside it gets every
// record.
func TestSinkFailureReported(t *testing.T) {
	trace := genTrace(t, gen.Options{Flows: 5000, Seed: 3, Duration: 10 * time.Second})
	for _, workers := range []int{1, 3} {
		var logs bytes.Buffer
		bad, good := &flaky{fail: 2, n: 3}, &flaky{}
		cfg := DefaultConfig()
		cfg.Workers = workers
		cfg.Sinks = []record.Named{{Name: "bad", Sink: bad}, {Name: "good", Sink: good}}
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		defer func(n uint64) { logSyncEvery = n }(logSyncEvery)
		logSyncEvery = 4096 // several merges
		pl, err := NewPipeline(cfg)
		if err != nil {
			t.Fatal(err)
		}
		reg := prometheus.NewPedanticRegistry()
		if err := pl.Register(reg); err != nil {
			t.Fatal(err)
		}
		s, err := Replay(context.Background(), []string{trace}, ReplayOptions{Pipeline: pl})
		if !errors.Is(err, errFlaky) || !strings.Contains(err.Error(), "bad") {
			t.Errorf("workers %d: replay error %v, want the sink's", workers, err)
		}
		if s == nil || good.got != int(s.Flows) || bad.calls < 6 || bad.got >= good.got || bad.got == 0 {
			t.Fatalf("workers %d: %d flows; good sink got %d records, bad %d in %d calls", workers, s.Flows, good.got, bad.got, bad.calls)
		}
		out := logs.String()
		if strings.Count(out, `msg="component failing" component=records:bad`) != 1 || strings.Count(out, `msg="component recovered" component=records:bad`) != 1 ||
			strings.Contains(out, "records:good") {
			t.Errorf("workers %d: log:\n%s", workers, out)
		}
		want := map[string]float64{"bad": float64(good.got - bad.got), "good": 0}
		for name, lost := range want {
			if got := gathered(t, reg, "flowmon_records_failed_total", name); got != lost {
				t.Errorf("workers %d: flowmon_records_failed_total{sink=%q} = %v, want %v", workers, name, got, lost)
			}
		}
		h := pl.Sinks()
		if len(h) != 2 || h[0].Errors != 3 || h[0].Failing || h[1].Errors != 0 || h[0].Written != uint64(bad.got) {
			t.Errorf("workers %d: health %+v", workers, h)
		}
	}
}

// gathered is the value of the counter name{sink="sink"} in reg.
func gathered(t *testing.T, reg *prometheus.Registry, name, sink string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if l.GetName() == "sink" && l.GetValue() == sink {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{sink=%q}", name, sink)
	return 0
}

// TestSummaryWarnsOfKernelDrops: a live run's summary warns when the
// kernel dropped more than a quarter of the packets, and not below.
func TestSummaryWarnsOfKernelDrops(t *testing.T) {
	for _, c := range []struct {
		packets, drops uint64
		warn           bool
	}{{1000, 0, false}, {1000, 250, false}, {1000, 251, true}, {0, 0, false}} {
		s := &Summary{KernelPackets: &c.packets, KernelDrops: &c.drops}
		s.warn(1)
		if got := len(s.Warnings) == 1 && strings.Contains(s.Warnings[0], "the kernel dropped"); got != c.warn {
			t.Errorf("%d of %d dropped: warnings %q", c.drops, c.packets, s.Warnings)
		}
	}
}
