package cputime

import (
	"runtime"
	"testing"
	"time"
)

// Meter reports a benchmark's thread CPU time per operation as cpu-ns/op
// next to the wall time: on a shared machine the wall time of a run
// swings by tens of percent with the other tenants, while CPU time counts
// only the time the benchmark ran (memory stalls included). It locks the
// goroutine to its thread for the clock to be the benchmark's.
type Meter struct {
	start, paused, spent time.Duration
}

// Start locks the thread and starts the clock: call it just before the
// b.Loop loop.
func Start() *Meter {
	runtime.LockOSThread()
	return &Meter{start: Thread()}
}

// Pause and Resume leave out work between them (with b.StopTimer).
func (m *Meter) Pause()  { m.paused = Thread() }
func (m *Meter) Resume() { m.spent += Thread() - m.paused }

// Report stops the clock and reports cpu-ns/op.
func (m *Meter) Report(b *testing.B) {
	d := Thread() - m.start - m.spent
	runtime.UnlockOSThread()
	if d > 0 {
		b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}
