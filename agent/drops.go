package agent

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/health"
)

// dropWatch holds the kernel's drops against a share of the packets over
// the last minute: the counters since start would hide a burst of drops
// an hour in, and the rate of one interval would flap. Its component,
// "kernel-drops", fails while the share is over the limit.
type dropWatch struct {
	read   func() (capture.KernelStats, bool)
	limit  float64
	health *health.Component

	mu      sync.Mutex
	samples [dropSamples]capture.KernelStats // a ring, every dropEvery
	n       int                              // samples taken
	over    bool                             // the share is over limit now
	share   float64
}

const (
	dropEvery   = 5 * time.Second
	dropSamples = int(time.Minute/dropEvery) + 1
)

func newDropWatch(read func() (capture.KernelStats, bool), limit float64, c *health.Component) *dropWatch {
	return &dropWatch{read: read, limit: limit, health: c}
}

// run samples until stop is closed.
func (d *dropWatch) run(stop <-chan struct{}) {
	t := time.NewTicker(dropEvery)
	defer t.Stop()
	d.sample()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			d.sample()
		}
	}
}

// sample reads the kernel's counts and reports the share against the
// limit to the component.
func (d *dropWatch) sample() {
	ks, ok := d.read()
	if !ok {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.samples[d.n%dropSamples] = ks
	d.n++
	oldest := d.samples[max(d.n-dropSamples, 0)%dropSamples]
	pk, dr := ks.Packets-oldest.Packets, ks.Drops-oldest.Drops
	d.share = 0
	if pk > 0 {
		d.share = float64(dr) / float64(pk)
	}
	if d.over = d.share > d.limit; d.over {
		d.health.Fail(fmt.Errorf("the kernel dropped %.1f%% of the packets over the last minute (%d of %d; health.max-drop-share %g): the capture does not keep up",
			100*d.share, dr, pk, d.limit))
		return
	}
	d.health.OK()
}

var descDropShare = prometheus.NewDesc("flowmon_capture_kernel_drop_share",
	"Share of the packets the kernel handed the capture that it dropped (rings full) over the last minute; /healthz fails above health.max-drop-share.", nil, nil)

func (d *dropWatch) Describe(ch chan<- *prometheus.Desc) { ch <- descDropShare }

func (d *dropWatch) Collect(ch chan<- prometheus.Metric) {
	d.mu.Lock()
	s := d.share
	d.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descDropShare, prometheus.GaugeValue, s)
}
