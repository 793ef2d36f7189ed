package main

import (
	"fmt"
	"io"
	"time"

	"github.com/flowmon/flowmon/agent"
)

// statusEvery is how often the live status line is redrawn.
const statusEvery = 2 * time.Second

// drawStatus redraws a one-line status of the live agent on w (a
// terminal) every statusEvery until stop: the packet rate over the last
// interval, the flows open, the kernel's drops and the alerts fired.
func drawStatus(w io.Writer, status func() agent.Status) (stop func()) {
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
				fmt.Fprint(w, "\r\033[K")
				return
			case now := <-t.C:
				st := status()
				rate := float64(st.Packets-last) / now.Sub(lastAt).Seconds()
				last, lastAt = st.Packets, now
				fmt.Fprintf(w, "\r\033[K%.0f pkt/s, %d packets, %d flows open, %d kernel drops, %d alerts",
					rate, st.Packets, st.OpenFlows, st.Kernel.Drops, st.Alerts)
			}
		}
	}()
	return func() { close(done); <-finished }
}
