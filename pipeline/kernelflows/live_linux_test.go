//go:build linux

package kernelflows

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/flowmon/flowmon/internal/testutil/bpftest"
	"github.com/flowmon/flowmon/record"
)

// flows collects a table's records.
type flows struct{ f []record.Flow }

func (o *flows) Next() *record.Flow {
	o.f = append(o.f, record.Flow{})
	return &o.f[len(o.f)-1]
}

// udpFrame is an Ethernet frame of a UDP datagram from 10.0.0.1:1000 to
// 10.0.0.2:53 with 8 payload bytes.
func udpFrame() []byte {
	f := make([]byte, 12)
	f = binary.BigEndian.AppendUint16(f, 0x0800)
	udp := []byte{0x03, 0xe8, 0, 53, 0, 16, 0, 0, 'p', 'a', 'y', 'l', 'o', 'a', 'd', '!'}
	ip := []byte{0x45, 0, 0, byte(20 + len(udp)), 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2}
	return append(append(f, ip...), udp...)
}

// TestLiveTableWallClock: a live table's flow, kept by the XDP program
// at the kernel's monotonic clock, reaches its record with the wall
// clock's times, its start event read by ReadEvents and its record
// written by Finish.
func TestLiveTableWallClock(t *testing.T) {
	bpftest.Require(t)
	var out flows
	var starts int
	tb, err := NewLive(Config{Cells: 1024, EventRing: 1 << 16}, "xdp", 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	tb.SetOutputs(&out, func(ev *record.Event) {
		if ev.Kind == record.FlowStarted {
			starts++
		}
	}, nil)
	before := time.Now()
	for range 2 {
		if ret, err := tb.st.XDPProgram().Run(&ebpf.RunOptions{Data: udpFrame()}); err != nil || ret != 2 {
			t.Fatalf("run: %d, %v (want XDP_PASS)", ret, err)
		}
	}
	after := time.Now()
	n, err := tb.ReadEvents(time.Second)
	if err != nil || n != 1 || starts != 1 {
		t.Fatalf("ReadEvents: %d events, %d starts, %v: want the flow's start", n, starts, err)
	}
	if err := tb.Tick(); err != nil {
		t.Fatal(err)
	}
	if err := tb.Detach(); err != nil {
		t.Fatal(err)
	}
	if err := tb.Finish(); err != nil {
		t.Fatal(err)
	}
	if len(out.f) != 1 {
		t.Fatalf("%d records, want 1", len(out.f))
	}
	f := out.f[0]
	// The offset is measured at each Tick: a clock step between the run
	// and the Tick moves it, so a little slack.
	slack := 50 * time.Millisecond
	if s := time.Unix(0, f.Start); s.Before(before.Add(-slack)) || s.After(after.Add(slack)) || f.End < f.Start {
		t.Errorf("record times %v to %v, want between %v and %v", s, time.Unix(0, f.End), before, after)
	}
	if f.OrigPkts+f.RespPkts != 2 || f.EndReason != record.EndForced {
		t.Errorf("record of %d packets, end %v: want 2, forced at the end", f.OrigPkts+f.RespPkts, f.EndReason)
	}
	st, err := tb.Stats()
	if err != nil || st.Records != 1 || st.Events != 1 || st.CellsInUse != 0 {
		t.Errorf("stats %+v, %v: want 1 record of 1 event, no cell in use", st, err)
	}
}
