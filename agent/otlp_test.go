package agent

import (
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowmon/flowmon/internal/health"
	"github.com/flowmon/flowmon/internal/testutil/otlprecv"
	"github.com/flowmon/flowmon/pipeline"
	"github.com/flowmon/flowmon/record"
	"github.com/flowmon/flowmon/record/otlp"
)

// otlpCase: an OTLP/HTTP collector that answers 503 for a while under
// traffic (a record written every 20 ms), then takes the requests again.
func otlpCase(t *testing.T, hr *health.Registry) (string, func(), func()) {
	var down atomic.Bool
	r := otlprecv.HTTP(t, func(int) *otlprecv.Answer {
		if down.Load() {
			return &otlprecv.Answer{Status: http.StatusServiceUnavailable}
		}
		return nil
	})
	cfg := pipeline.Config{Health: hr}
	x, closeOTLP, err := openOTLP(&otlp.Options{Endpoint: r.URL, BatchTimeout: 10 * time.Millisecond}, nil, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if x == nil || len(cfg.Sinks) != 1 || cfg.Sinks[0].Name != "otlp" {
		t.Fatalf("openOTLP made %v, sinks %v", x, cfg.Sinks)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		f := []record.Flow{{Orig: netip.MustParseAddr("10.0.0.1"), Resp: netip.MustParseAddr("10.0.0.2"), Proto: 17}}
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				_ = x.WriteFlows(f)
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		closeOTLP()
	})
	return "otlp:" + r.URL, func() { down.Store(true) }, func() { down.Store(false) }
}
