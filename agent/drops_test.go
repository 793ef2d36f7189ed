package agent

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/health"
)

// TestDropWatch: the kernel's drops fail the health check while their
// share of the last minute's packets is over the limit, which is said
// once when it starts and once when it ends; drops an hour ago do not
// count.
func TestDropWatch(t *testing.T) {
	var ks capture.KernelStats
	var log bytes.Buffer
	c := health.New("kernel-drops", slog.New(slog.NewTextHandler(&log, nil)))
	d := newDropWatch(func() (capture.KernelStats, bool) { return ks, true }, 0.25, c)
	step := func(packets, drops uint64) {
		ks.Packets += packets
		ks.Drops += drops
		d.sample()
	}
	step(0, 0)
	for range dropSamples {
		step(1000, 100) // 10%
	}
	if err := c.Err(); err != nil || log.Len() != 0 {
		t.Fatalf("10%% dropped: %v, %q", err, log.String())
	}
	step(1000, 5000) // a burst: over a quarter of the minute's packets
	if err := c.Err(); err == nil || !strings.Contains(err.Error(), "health.max-drop-share 0.25") {
		t.Fatalf("a burst of drops: failing %v (share %v)", err, d.share)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(d)
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 1 || mfs[0].GetMetric()[0].GetGauge().GetValue() <= 0.25 {
		t.Errorf("flowmon_capture_kernel_drop_share: %v %v", mfs, err)
	}
	step(1000, 2000)
	if n := strings.Count(log.String(), `msg="component failing" component=kernel-drops`); n != 1 {
		t.Errorf("said %d times:\n%s", n, log.String())
	}
	// A minute of a clean link: the burst leaves the window.
	for range dropSamples {
		step(1000, 0)
	}
	if err := c.Err(); err != nil || !strings.Contains(log.String(), `msg="component recovered" component=kernel-drops`) {
		t.Errorf("a minute after the burst: failing %v\n%s", err, log.String())
	}
}
