package main

import (
	"fmt"
	"time"

	"github.com/flowmon/flowmon/agent"
)

// statusEvery is how often the live status line is redrawn.
const statusEvery = 2 * time.Second

// drawStatus redraws the status line with the live agent's figures every statusEvery until stop: the packet rate over the last
// interval, the flows open, the kernel's drops and the alerts fired.
func drawStatus(l *statusLine, status func() agent.Status) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(statusEvery)
		defer t.Stop()
		last, lastAt := status().Packets, time.Now()
		for {
			select {
			case <-done:
				l.clear()
				return
			case now := <-t.C:
				st := status()
				rate := float64(st.Packets-last) / now.Sub(lastAt).Seconds()
				last, lastAt = st.Packets, now
				l.draw(fmt.Sprintf("%.0f pkt/s, %d packets, %d flows open, %d kernel drops, %d alerts",
					rate, st.Packets, st.OpenFlows, st.Kernel.Drops, st.Alerts))
			}
		}
	}()
	return func() { close(done); <-finished }
}
