package pipeline

import (
	"testing"
	"time"

	"github.com/flowmon/flowmon/internal/health"
	"github.com/flowmon/flowmon/pipeline/kernelflows"
)

// TestKernelLossHealth: the kernel flow state's health component fails
// when events or new flows are lost, says how many, and works again once
// kernelLossQuiet passes without a loss.
func TestKernelLossHealth(t *testing.T) {
	hr := health.NewRegistry()
	l := newKernelLoss(nil, hr)
	t0 := time.Unix(1e9, 0)
	st := kernelflows.Stats{Cells: 1024}
	l.check(st, nil, t0)
	if l.c.Failing() {
		t.Fatal("failing with nothing lost")
	}
	st.EventsLost, st.RecordsLost = 5, 2
	l.check(st, nil, t0.Add(time.Second))
	if err := l.c.Err(); err == nil {
		t.Fatal("not failing after 5 events lost")
	} else if want := "5 flow events lost to a full event ring (2 flows' final counts with them), 0 new flows not kept"; len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
		t.Errorf("error %q, want it to start %q", err, want)
	}
	l.check(st, nil, t0.Add(5*time.Second)) // no new loss, not quiet long enough
	if !l.c.Failing() {
		t.Error("working again 4 s after a loss")
	}
	st.InsertFailed = 3
	l.check(st, nil, t0.Add(6*time.Second))
	l.check(st, nil, t0.Add(17*time.Second))
	if l.c.Failing() {
		t.Errorf("still failing 11 s after the last loss: %v", l.c.Err())
	}
	if s := l.c.Status(); s.Failures != 1 {
		t.Errorf("%d failures counted, want 1 (one failure that lasted)", s.Failures)
	}
}
