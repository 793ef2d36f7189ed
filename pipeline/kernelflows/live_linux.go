//go:build linux

package kernelflows

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/bpf"
	"github.com/flowmon/flowmon/bpf/source"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/pipeline/flowtable"
	"github.com/flowmon/flowmon/record"
)

// A live table (NewLive) keeps the flows of an interface: the program
// runs at XDP or TC (OpenSource attaches it) at the kernel's monotonic
// clock, and the table's own goroutine reads the events as they come
// (ReadEvents) and ages the cells by the same clock (Tick). The records'
// times are the wall clock: the cells' times plus the offset of the wall
// clock from the monotonic one, measured at each Tick.

// liveEventRing is a live table's event ring by default (Config's
// EventRing): 16 MiB, about 60,000 events, what a million new flows a
// second send in the 20 ms a reader that polls may leave them.
const liveEventRing = 16 << 20

// NewLive loads the kernel's flow state's live programs for c at hook
// (source.HookXDP or source.HookTC), attached nowhere until OpenSource.
// frameRing is the size of the ring of the frames left to user space
// (0: 4 MiB).
func NewLive(c Config, hook string, frameRing int) (*Table, error) {
	if c.EventRing == 0 {
		c.EventRing = liveEventRing
	}
	to := c.withDefaults()
	so := to.stateOptions()
	so.Live, so.FrameRing = hook, frameRing
	st, err := bpf.LoadState(so)
	if err != nil {
		return nil, err
	}
	if err := st.SetTunnels(to.tunnels()); err != nil {
		st.Close()
		return nil, fmt.Errorf("load eBPF flow state: set the tunnels: %w", err)
	}
	rd, err := st.NewEventReader()
	if err != nil {
		st.Close()
		return nil, err
	}
	t := &Table{st: st, rd: rd, tables: acsm.MachineTables(c.Machine), out: to.Out, events: to.Events, idleNew: int64(to.IdleNew),
		idleEst: int64(to.IdleEstablished), attempt: int64(to.AttemptDelay), cells: to.Cells, linger: int64(flowtable.Linger), states: map[string]uint64{},
		live: true}
	t.setClock()
	return t, nil
}

// OpenSource attaches the live programs at c's hook on c's interface
// and returns the source of the frames they leave to user space
// (source.OpenState). Closing the source detaches them.
func (t *Table) OpenSource(c source.Config) (*source.Ring, error) {
	if !t.live {
		return nil, errors.New("open the kernel flow state's source: not a live table (NewLive)")
	}
	r, err := source.OpenState(c, t.st)
	if err == nil {
		r.SetDatagramTaker(t)
	}
	return r, err
}

// SetOutputs sets where the records and the flow events go (Config's
// Out and Events), before the first ReadEvents.
func (t *Table) SetOutputs(out flowtable.Out, events func(*record.Event), counts func(packets, duplicates uint64, now int64)) {
	t.out, t.events, t.counts = out, events, counts
}

// setClock measures the offset of the wall clock from the monotonic
// clock of the program's times.
func (t *Table) setClock() {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return
	}
	t.off = time.Now().UnixNano() - ts.Nano()
}

// monoNow is the monotonic clock now, as the program reads it.
func monoNow() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return ts.Nano()
}

// ReadEvents handles the events the program sends, waiting up to wait
// for the first, and returns how many it handled (at most
// MaxEventsRead). A reader that polls (wait 0) every few milliseconds
// wakes once for many events, where one that waits is woken by each
// event that finds it caught up.
func (t *Table) ReadEvents(wait time.Duration) (int, error) {
	t.rd.SetDeadline(time.Now().Add(wait))
	n := 0
	for n < MaxEventsRead {
		err := t.rd.ReadInto(&t.rb)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			return n, fmt.Errorf("read the eBPF flow events: %w", err)
		}
		if t.events == nil && len(t.rb.RawSample) > 0 && t.rb.RawSample[0] == bpf.EventStart {
			// A start is for the consumers only: without any, counted
			// and not parsed (most of a busy link's events).
			t.stats.Events++
		} else {
			if err := bpf.ParseEvent(t.rb.RawSample, &t.ev); err != nil {
				return n, err
			}
			t.event(&t.ev)
		}
		if n++; n == 1 {
			// The rest without waiting: what is in the ring now.
			t.rd.SetDeadline(time.Now())
		}
	}
	t.publish()
	return n, nil
}

// Tick ages the cells to the monotonic clock now (advance): the ended
// flows whose linger is over, and every sweepEvery the flows idle past
// their timeout, get their records.
func (t *Table) Tick() error {
	t.setClock()
	now := monoNow()
	err := t.rotate(now)
	if err == nil {
		err = t.advance(now)
	}
	t.publish()
	return err
}

// Detach takes the live programs off their hooks: no packet changes the
// cells after it, so Finish writes them as they are.
func (t *Table) Detach() error { return t.st.Detach() }

// Live says whether t is a live table (NewLive).
func (t *Table) Live() bool { return t.live }

var _ capture.LiveSource = (*source.Ring)(nil)
