//go:build linux

package bpf

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/internal/testutil/bpftest"
)

// TestStateLiveHandsUpWhole runs frames through the live flow state's
// XDP and TC ingress programs: a flow's datagram goes into its cell and
// nothing goes up; a datagram to a tunnel port goes up whole through the
// frames ring (a record of reason ReasonRaw, then the frame's bytes, as
// capture.c hands a tunnel up), counted; every frame goes on.
func TestStateLiveHandsUpWhole(t *testing.T) {
	bpftest.Require(t)
	tb := acsm.MachineTables(acsm.MachineZeek)
	s, err := LoadState(StateOptions{Cells: 1024, EventRing: 1 << 16, FrameRing: 1 << 16, Live: LiveAll,
		Machine: StateMachine{Next: tb.Next, Info: tb.Info, Start: tb.Start, ServerPorts: tb.ServerPorts}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SetTunnels(Tunnels{Ports: []uint16{4789}}); err != nil {
		t.Fatal(err)
	}
	rd, err := s.NewFrameReader()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	flow, tunnel := udpFrame(a, b, 1000, 53), udpFrame(a, b, 1000, 4789)
	for _, p := range []struct {
		name string
		prog *ebpf.Program
		pass uint32
	}{{"xdp", s.XDPProgram(), 2}, {"tc-ingress", s.TCIngressProgram(), ^uint32(0)}} {
		for _, f := range []struct {
			frame []byte
			up    bool
		}{{flow, false}, {tunnel, true}} {
			ret, err := p.prog.Run(&ebpf.RunOptions{Data: f.frame})
			if err != nil || ret != p.pass {
				t.Fatalf("%s: run: %d, %v (want %d)", p.name, ret, err, p.pass)
			}
			rd.SetDeadline(time.Now())
			var rec ringbuf.Record
			err = rd.ReadInto(&rec)
			if !f.up {
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Errorf("%s: a flow's frame went up (%v)", p.name, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: a tunnel's frame did not go up: %v", p.name, err)
			}
			r := (*Record)(unsafe.Pointer(&rec.RawSample[0]))
			if r.Reason != ReasonRaw || int(r.PayloadLen) != len(f.frame) || !bytes.Equal(rec.RawSample[RecordSize:RecordSize+len(f.frame)], f.frame) {
				t.Errorf("%s: handed up reason %d, %d bytes: want %d, the frame's %d", p.name, r.Reason, r.PayloadLen, ReasonRaw, len(f.frame))
			}
		}
	}
	c, err := s.FrameCounters()
	if err != nil {
		t.Fatal(err)
	}
	if c.Handed != 2 || c.Lost != 0 {
		t.Errorf("frame counters %+v, want 2 handed up", c)
	}
	sc, err := s.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if sc.Seen != 4 || sc.Counted != 2 || sc.Whole != 2 {
		t.Errorf("state counters seen %d counted %d whole %d, want 4, 2, 2", sc.Seen, sc.Counted, sc.Whole)
	}
	cells, pkts := 0, uint64(0)
	if err := s.Cells(func(_ [40]byte, c Cell) bool { cells, pkts = cells+1, pkts+c.Pkts[0]+c.Pkts[1]; return true }); err != nil {
		t.Fatal(err)
	}
	if cells != 1 || pkts != 2 {
		t.Errorf("%d cells of %d packets, want the flow's, of 2", cells, pkts)
	}
	// A live load runs a frame user space gives it (a datagram it
	// reassembled) into the same cells.
	if v, err := s.Run(flow, 0, new([]byte)); err != nil || v != Kept {
		t.Fatalf("Run on a live state: %v, %v; want Kept", v, err)
	}
	pkts = 0
	if err := s.Cells(func(_ [40]byte, c Cell) bool { pkts += c.Pkts[0] + c.Pkts[1]; return true }); err != nil {
		t.Fatal(err)
	}
	if pkts != 3 {
		t.Errorf("after Run, the flow's cell has %d packets, want 3", pkts)
	}
}
