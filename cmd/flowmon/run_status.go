package main

import (
	"fmt"
	"io"
	"time"

	"github.com/flowmon/flowmon/pipeline"
)

// statusEvery is how often the live status line is redrawn.
const statusEvery = 2 * time.Second

// drawStatus redraws a one-line status of the live pipeline on w (a
// terminal) every statusEvery until stop: the packet rate over the last
// interval, the flows open, the kernel's drops and the alerts fired.
func drawStatus(w io.Writer, pl *pipeline.Pipeline, p *pipeline.Progress) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(statusEvery)
		defer t.Stop()
		last, lastAt := p.Packets.Load(), time.Now()
		for {
			select {
			case <-done:
				fmt.Fprint(w, "\r\033[K")
				return
			case now := <-t.C:
				pk := p.Packets.Load()
				rate := float64(pk-last) / now.Sub(lastAt).Seconds()
				last, lastAt = pk, now
				st := pl.Status()
				fmt.Fprintf(w, "\r\033[K%.0f pkt/s, %d packets, %d flows open, %d kernel drops, %d alerts",
					rate, pk, st.OpenFlows, st.Kernel.Drops, st.Alerts)
			}
		}
	}()
	return func() { close(done); <-finished }
}
