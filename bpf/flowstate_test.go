//go:build linux

package bpf_test

import (
	"errors"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/bpf"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/testutil/bpftest"
	"github.com/flowmon/flowmon/internal/testutil/sharedpcaps"
)

func stateMachine(k acsm.MachineKind) bpf.StateMachine {
	t := acsm.MachineTables(k)
	return bpf.StateMachine{Next: t.Next, Info: t.Info, Start: t.Start, ServerPorts: t.ServerPorts}
}

// wantFlow is what user space makes of a flow the program keeps: its
// packets, bytes and flags, and the exact ACSM's value.
type wantFlow struct {
	pkts, ipBytes, payload [2]uint64
	flags                  [2]uint16
	first, last            int64
	starts                 uint32
}

// TestStateMatchesUserSpace runs every real Ethernet capture's frames
// through the flow-state program and checks each cell against what the
// Go decoder and the exact ACSM (Tracker, backend exact, ended flows
// kept) make of the same frames: the machine value's conn_state and
// orientation, packets, IP and payload bytes and flag unions each way,
// first and last times, and how many flows the 5-tuple held. The frames
// the program leaves to user space (tunnels) and those the ACSM skips
// are left out on both sides and counted.
func TestStateMatchesUserSpace(t *testing.T) {
	bpftest.Require(t)
	tables := acsm.MachineTables(acsm.MachineZeek)
	opts := capture.DefaultDecodeOptions()
	var ports []uint16
	for _, l := range [][]uint16{opts.VXLANPorts, opts.GenevePorts, opts.GTPPorts, opts.TeredoPorts, opts.AYIYAPorts, opts.GREOverUDPPorts} {
		ports = append(ports, l...)
	}
	s, err := bpf.LoadState(bpf.StateOptions{Cells: 1 << 16, EventRing: 1 << 20, Machine: stateMachine(acsm.MachineZeek)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SetTunnelPorts(ports); err != nil {
		t.Fatal(err)
	}
	files, frames, flows, userFrames := 0, 0, 0, 0
	differs := map[string]string{} // captures whose cells are not compared, and why
	var before bpf.StateCounters
	for _, c := range sharedpcaps.Captures(t) {
		if !strings.HasPrefix(c.Link, "1/EN10MB") {
			continue
		}
		r, err := capture.Open(c.Path)
		if err != nil {
			continue
		}
		if err := s.ClearCells(); err != nil {
			t.Fatal(err)
		}
		tr, err := acsm.New(acsm.Config{Backend: acsm.BackendExact, Capacity: 1 << 16, KeepEnded: true})
		if err != nil {
			t.Fatal(err)
		}
		want := map[[40]byte]*wantFlow{}
		var f capture.Frame
		var p capture.Packet
		var buf []byte
		counted := uint64(0)
		for {
			if err := r.NextFrame(&f); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Logf("%s: %v", c.Name, err)
				}
				break
			}
			if f.Link != 1 {
				continue
			}
			now := f.Time.UnixNano()
			verdict, err := s.Run(f.Data, now, &buf)
			if err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			frames++
			reason := opts.Decode(&p, f.Link, f.Data, f.Wire, f.Time)
			userOnes := reason != capture.ReasonNone || p.Tunnels > 0 || p.CarrierOnly ||
				p.Fragment == capture.LaterFragment || (p.Key.Proto == capture.ProtoTCP && !p.HasTCP)
			switch verdict {
			case bpf.Whole:
				userFrames++ // user space decodes it as it decodes any frame
				continue
			case bpf.Left:
				// One the ACSM leaves out too, or one neither decodes.
				if !userOnes {
					t.Errorf("%s: the program left out %v, which user space counts", c.Name, p.Key)
				}
				continue
			}
			if userOnes {
				if reason == capture.ReasonNone && p.Tunnel == capture.TunnelTeredo {
					// The Go decoder finds Teredo off its ports too
					// (Zeek's heuristic on the payload); the program
					// looks at the ports only, so it counts the
					// carrier where user space counts what it carries.
					differs[c.Name] = "Teredo off its ports"
					continue
				}
				t.Errorf("%s: the program kept a frame user space leaves out (%v)", c.Name, p.Key)
				continue
			}
			counted++
			// The program ages nothing (user space sweeps its cells):
			// one time for the ACSM, so that it ages nothing either.
			p.Timestamp = time.Unix(1e9, 0)
			var ev acsm.Event
			tr.ObserveInto(&p, &ev)
			var k [40]byte
			p.Key.PutBinary(&k)
			w := want[k]
			if w == nil || ev.New {
				starts := uint32(1)
				if w != nil {
					starts = w.starts + 1
				}
				w = &wantFlow{first: now, starts: starts}
				want[k] = w
			}
			d := 0
			if p.Reversed {
				d = 1
			}
			w.last = now
			w.pkts[d]++
			w.ipBytes[d] += uint64(p.IPLen)
			w.payload[d] += uint64(p.PayloadLen)
			if p.HasTCP {
				w.flags[d] |= uint16(p.Flags)
			}
		}
		r.Close()
		all, err := s.Counters()
		if err != nil {
			t.Fatal(err)
		}
		sc := all
		sc.Counted -= before.Counted
		sc.InsertFailed -= before.InsertFailed
		before = all
		if why, ok := differs[c.Name]; ok {
			t.Logf("%s: cells not compared: %s", c.Name, why)
			continue
		}
		if sc.Counted != counted || sc.InsertFailed != 0 {
			t.Errorf("%s: the program counted %d packets (%d not entered), user space %d",
				c.Name, sc.Counted, sc.InsertFailed, counted)
		}
		held := 0
		err = s.Cells(func(key [40]byte, got bpf.Cell) bool {
			held++
			var k capture.Key
			_ = k.UnmarshalBinary(key[:])
			w := want[key]
			if w == nil {
				t.Errorf("%s: a cell for %v, a flow user space does not have", c.Name, k)
				return true
			}
			v, res := tr.QueryValue(k.Hash())
			if res != acsm.Found {
				t.Errorf("%s: %v: the exact ACSM does not hold it", c.Name, k)
				return true
			}
			gs, wantS := tables.Conn[got.Value], tables.Conn[v]
			if gs != wantS || got.Value != v {
				t.Errorf("%s: %v: value %d (%v), the ACSM's %d (%v)", c.Name, k, got.Value, gs, v, wantS)
			}
			if got.Pkts != w.pkts || got.IPBytes != w.ipBytes || got.Payload != w.payload || got.TCPFlags != w.flags ||
				got.First != w.first || got.Last != w.last || got.Starts != w.starts {
				t.Errorf("%s: %v: cell %+v, user space %+v", c.Name, k, got, *w)
			}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if held != len(want) {
			t.Errorf("%s: %d cells, user space %d flows", c.Name, held, len(want))
		}
		flows += held
		files++
	}
	t.Logf("%d Ethernet captures, %d frames (%d left to user space to decode), %d flows agree; %d captures not compared",
		files, frames, userFrames, flows, len(differs))
	if len(differs) > 5 {
		t.Errorf("%d captures differ for a known cause: more than the 5 expected", len(differs))
	}
}

// TestStateTwoCPUs runs one capture's frames through the program from
// two threads pinned to different CPUs at once, each frame on both: every
// cell's packets and bytes are then twice a single run's, none lost to a
// race on a cell or on a flow's start.
func TestStateTwoCPUs(t *testing.T) {
	bpftest.Require(t)
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU")
	}
	var frames [][]byte
	var times []int64
	for _, c := range sharedpcaps.Captures(t) {
		if c.Name != "arkime/mongo.pcap" && c.Name != "arkime/bt-tcp.pcap" && c.Name != "arkime/dns-udp.pcap" {
			continue
		}
		r, err := capture.Open(c.Path)
		if err != nil {
			t.Fatal(err)
		}
		var f capture.Frame
		for r.NextFrame(&f) == nil {
			frames = append(frames, append([]byte(nil), f.Data...))
			times = append(times, f.Time.UnixNano())
		}
		r.Close()
	}
	if len(frames) == 0 {
		t.Fatal("no frames")
	}
	cells := func(runs []int) map[[40]byte]bpf.Cell {
		s, err := bpf.LoadState(bpf.StateOptions{Cells: 1 << 12, EventRing: 1 << 20, Machine: stateMachine(acsm.MachineZeek)})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var wg sync.WaitGroup
		errs := make(chan error, len(runs))
		for _, cpu := range runs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var set unix.CPUSet
				set.Set(cpu)
				if err := unix.SchedSetaffinity(0, &set); err != nil {
					errs <- err
					return
				}
				var buf []byte
				for i, f := range frames {
					if _, err := s.Run(f, times[i], &buf); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		m := map[[40]byte]bpf.Cell{}
		if err := s.Cells(func(k [40]byte, c bpf.Cell) bool { m[k] = c; return true }); err != nil {
			t.Fatal(err)
		}
		return m
	}
	one, two := cells([]int{0}), cells([]int{0, 1})
	if len(one) != len(two) || len(one) == 0 {
		t.Fatalf("%d cells from one run, %d from two", len(one), len(two))
	}
	for k, c := range one {
		d := two[k]
		for i := range 2 {
			if d.Pkts[i] != 2*c.Pkts[i] || d.IPBytes[i] != 2*c.IPBytes[i] || d.Payload[i] != 2*c.Payload[i] {
				t.Errorf("side %d: two CPUs counted %d packets, %d IP bytes, %d payload bytes; one %d, %d, %d",
					i, d.Pkts[i], d.IPBytes[i], d.Payload[i], c.Pkts[i], c.IPBytes[i], c.Payload[i])
			}
		}
	}
	t.Logf("%d frames twice, %d cells exact", len(frames), len(one))
}
