package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/record"
	"github.com/flowmon/flowmon/record/connlog"
)

// reasons is a sink keeping every record.
type reasons struct{ flows []record.Flow }

func (r *reasons) WriteFlows(fs []record.Flow) error { r.flows = append(r.flows, fs...); return nil }
func (r *reasons) Flush() error                      { return nil }

// TestActiveTimeoutInterimRecords replays a trace of flows up to a minute
// long with a 2 s active timeout: every flow open longer has an interim
// record (record.EndActive) for each 2 s it was open at one of its
// packets, with its counts so far, and its final record is the one a
// replay without the timeout writes; the conn.log lines of interim
// records say "interim":true. Without the timeout there is none. The
// generated flows last up to about 7 s.
func TestActiveTimeoutInterimRecords(t *testing.T) {
	const active = 2 * time.Second
	trace := genTrace(t, gen.Options{Flows: 2000, Seed: 9, Duration: 30 * time.Second})
	run := func(timeout time.Duration) ([]record.Flow, []byte) {
		cfg := DefaultConfig()
		cfg.Workers = 1
		cfg.ActiveTimeout = timeout
		var keep reasons
		var log bytes.Buffer
		cfg.Sinks = append(connLog(&log), record.Named{Name: "keep", Sink: &keep})
		if _, err := Replay(context.Background(), []string{trace}, ReplayOptions{Config: cfg}); err != nil {
			t.Fatal(err)
		}
		return keep.flows, log.Bytes()
	}
	plain, _ := run(0)
	withInterim, log := run(active)
	final := map[uint64]record.Flow{} // by uid seed
	for _, f := range plain {
		if f.EndReason == record.EndActive {
			t.Fatalf("an interim record without an active timeout: %+v", f)
		}
		final[f.UID] = f
	}
	interims := map[uint64][]record.Flow{}
	var finals int
	for _, f := range withInterim {
		if f.EndReason == record.EndActive {
			interims[f.UID] = append(interims[f.UID], f)
			continue
		}
		finals++
		want, ok := final[f.UID]
		if !ok || f != want {
			t.Fatalf("final record %+v differs from the one without interim records: %+v", f, want)
		}
	}
	if finals != len(plain) {
		t.Fatalf("%d final records, %d without the timeout", finals, len(plain))
	}
	long := 0
	for uid, f := range final {
		open := time.Duration(f.End - f.Start)
		is := interims[uid]
		if open >= active {
			long++
		}
		if open < active && len(is) > 0 || len(is) > int(open/(active)) {
			t.Errorf("flow open %v: %d interim records", open, len(is))
		}
		var prev record.Flow
		for i, r := range is {
			if r.Start != f.Start || r.End-r.Start < int64(i+1)*int64(active) || r.OrigPkts < prev.OrigPkts ||
				r.OrigPkts+r.RespPkts > f.OrigPkts+f.RespPkts || r.CommunityID != f.CommunityID {
				t.Errorf("interim record %d of a flow open %v: %+v (final %+v)", i, open, r, f)
			}
			prev = r
		}
	}
	if long == 0 || len(interims) == 0 {
		t.Fatalf("%d flows open 2 s or more, %d with interim records", long, len(interims))
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(log))
	for sc.Scan() {
		var r connlog.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Interim {
			n++
		}
	}
	if want := len(withInterim) - finals; n != want {
		t.Errorf("%d conn.log lines say interim, want %d", n, want)
	}
	t.Logf("%d flows, %d open 2 s or more, %d interim records over %d flows", len(plain), long, len(withInterim)-finals, len(interims))
}
