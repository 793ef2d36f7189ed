package agent

import (
	"bytes"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/capture"
)

// TestDropWatch: the kernel's drops fail the health check while their
// share of the last minute's packets is over the limit, which is said
// once when it starts and once when it ends; drops an hour ago do not
// count.
func TestDropWatch(t *testing.T) {
	var ks capture.KernelStats
	var log bytes.Buffer
	d := newDropWatch(func() (capture.KernelStats, bool) { return ks, true }, 0.25, &log)
	step := func(packets, drops uint64) {
		ks.Packets += packets
		ks.Drops += drops
		d.sample()
	}
	step(0, 0)
	for range dropSamples {
		step(1000, 100) // 10%
	}
	if f := d.failing(); f != "" || log.Len() != 0 {
		t.Fatalf("10%% dropped: %q, %q", f, log.String())
	}
	step(1000, 5000) // a burst: over a quarter of the minute's packets
	if f := d.failing(); !strings.Contains(f, "health.max-drop-share 0.25") {
		t.Fatalf("a burst of drops: failing %q (share %v)", f, d.share)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(d)
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || mfs[0].GetMetric()[0].GetGauge().GetValue() <= 0.25 {
		t.Errorf("flowmon_capture_kernel_drop_share: %v %v", mfs, err)
	}
	step(1000, 2000)
	if n := strings.Count(log.String(), "the capture does not keep up"); n != 1 {
		t.Errorf("said %d times:\n%s", n, log.String())
	}
	// A minute of a clean link: the burst leaves the window.
	for range dropSamples {
		step(1000, 0)
	}
	if f := d.failing(); f != "" || !strings.Contains(log.String(), "back under health.max-drop-share") {
		t.Errorf("a minute after the burst: failing %q\n%s", f, log.String())
	}
}
