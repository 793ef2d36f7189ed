//go:build linux

package kernelflows_test

import (
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
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
	"github.com/flowmon/flowmon/pipeline/flowtable"
	"github.com/flowmon/flowmon/pipeline/kernelflows"
	"github.com/flowmon/flowmon/record"
)

// never is a linger no capture reaches, even one whose clock jumps
// by centuries.
const never = time.Duration(math.MaxInt64)

// wantFlow is what user space makes of a flow the program keeps: its
// packets and times, the exact ACSM's value (the one it ended at, once it
// ended), conn.log's fields by flowtable.Conn.Observe with the ACSM's
// orientation, the first packet's uid inputs and the flag anomalies.
type wantFlow struct {
	pkts             [2]uint64
	first, last      int64
	starts           uint32
	value            uint16
	ended            bool
	conn             flowtable.Conn
	seq, ack, ipid   uint32
	flags, anomalies uint16
}

// connRecord spells a Conn into a record's conn.log fields.
func connRecord(c *flowtable.Conn, proto uint8, origIsDst bool) record.Flow {
	var f record.Flow
	c.Fill(&f, proto, origIsDst)
	return f
}

// connString is a record's conn.log fields for a test's message.
func connString(f *record.Flow) string {
	return fmt.Sprintf("history %s bytes %d/%d ip %d/%d flags %#x/%#x missed %d", f.History.String(), f.OrigBytes,
		f.RespBytes, f.OrigIPBytes, f.RespIPBytes, uint16(f.OrigTCPFlags), uint16(f.RespTCPFlags), f.MissedBytes)
}

// TestStateMatchesUserSpace runs every real Ethernet capture's frames
// through the flow-state program and checks each cell against what the
// Go decoder, the exact ACSM (Tracker, backend exact, ended flows kept)
// and flowtable.Conn make of the same frames: the machine value (the one
// the flow ended at, once it ended), packets each way, first and last
// times, how many flows the 5-tuple held, conn.log's fields (the cell's
// Conn and Observe's with the ACSM's orientation, equal, and so the
// history, bytes, IP bytes, flag unions and missed bytes Fill spells),
// the first packet's uid inputs and the flag anomalies. Timeouts and the
// linger are set past any capture's length, so that a 5-tuple's flows
// split only by reuse, as the ACSM splits them. The frames the program
// leaves to user space (tunnels, fragments) are left out on both sides
// and counted.
func TestStateMatchesUserSpace(t *testing.T) {
	bpftest.Require(t)
	tables := acsm.MachineTables(acsm.MachineZeek)
	opts := capture.DefaultDecodeOptions()
	ports := opts.UDPTunnelPorts()
	s, err := bpf.LoadState(bpf.StateOptions{Cells: 1 << 16, EventRing: 1 << 20, Machine: kernelflows.Machine(acsm.MachineZeek),
		Linger: never})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SetTunnels(bpf.Tunnels{Ports: ports, Teredo: opts.DetectTeredo, AYIYA: opts.DetectAYIYA}); err != nil {
		t.Fatal(err)
	}
	files, frames, flows, userFrames := 0, 0, 0, 0
	connDiffs := 0
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
				t.Errorf("%s: the program left out %v (the map is not full)", c.Name, p.Key)
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
			// The program ages nothing here (no idle timeouts, a
			// linger past every capture): one time for the ACSM, so
			// that it ages nothing either.
			p.Timestamp = time.Unix(1e9, 0)
			var ev acsm.Event
			tr.ObserveInto(&p, &ev)
			var k [40]byte
			p.Key.PutBinary(&k)
			w := want[k]
			first := w == nil || ev.New
			if first {
				starts := uint32(1)
				if w != nil {
					starts = w.starts + 1
				}
				w = &wantFlow{first: now, starts: starts, seq: p.Seq, ack: p.Ack, ipid: p.IPID, flags: uint16(p.Flags)}
				want[k] = w
			}
			d := 0
			if p.Reversed {
				d = 1
			}
			w.last = now
			w.pkts[d]++
			w.conn.Observe(&p, ev.OrigIsDst, first)
			w.anomalies |= uint16(ev.Anomalies & (acsm.SynFin | acsm.SynRst | acsm.FinRst | acsm.NullScan | acsm.XmasScan))
			if !w.ended {
				w.value, w.ended = ev.Value, ev.Ended
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
			gs, wantS := tables.Conn[got.Value], tables.Conn[w.value]
			if got.Value != w.value || got.Ended != w.ended {
				t.Errorf("%s: %v: value %d (%v, ended %v), the ACSM's %d (%v, ended %v)", c.Name, k, got.Value, gs,
					got.Ended, w.value, wantS, w.ended)
			}
			if got.Pkts != w.pkts || got.First != w.first || got.Last != w.last || got.Starts != w.starts {
				t.Errorf("%s: %v: packets %v, %d-%d, %d flows; user space %v, %d-%d, %d flows", c.Name, k, got.Pkts,
					got.First, got.Last, got.Starts, w.pkts, w.first, w.last, w.starts)
			}
			if got.FirstSeq != w.seq || got.FirstAck != w.ack || got.FirstIPID != w.ipid || got.FirstFlags != w.flags {
				t.Errorf("%s: %v: uid inputs seq %d ack %d ipid %d flags %#x; the first packet's %d %d %d %#x", c.Name, k,
					got.FirstSeq, got.FirstAck, got.FirstIPID, got.FirstFlags, w.seq, w.ack, w.ipid, w.flags)
			}
			if got.Anomalies != w.anomalies {
				t.Errorf("%s: %v: anomalies %#x, the ACSM's %#x", c.Name, k, got.Anomalies, w.anomalies)
			}
			conn, ok := flowtable.ConnFromBytes(got.Conn[:])
			if !ok {
				t.Fatalf("a cell's Conn of %d bytes, flowtable.ConnSize %d", len(got.Conn), flowtable.ConnSize)
			}
			origIsDst := tables.Info[got.Value]&acsm.InfoOrigIsDst != 0
			gr, wr := connRecord(&conn, k.Proto, origIsDst), connRecord(&w.conn, k.Proto, origIsDst)
			if !reflect.DeepEqual(conn, w.conn) {
				connDiffs++
				t.Errorf("%s: %v: conn fields\n  kernel %s\n  user   %s\n  %+v\n  %+v", c.Name, k, connString(&gr),
					connString(&wr), conn, w.conn)
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
	t.Logf("%d Ethernet captures, %d frames (%d left to user space to decode), %d flows (%d of them with other conn fields); %d captures not compared",
		files, frames, userFrames, flows, connDiffs, len(differs))
	if len(differs) > 5 {
		t.Errorf("%d captures differ for a known cause: more than the 5 expected", len(differs))
	}
}

// TestStateLayout pins the sizes user space reads: a cell's Conn is
// flowtable.Conn's bytes, and an event is 272 bytes in the ring.
func TestStateLayout(t *testing.T) {
	if bpf.ConnBytes != flowtable.ConnSize {
		t.Errorf("Cell.Conn is %d bytes, flowtable.Conn %d", bpf.ConnBytes, flowtable.ConnSize)
	}
	if bpf.EventSize != 272 {
		t.Errorf("an event is %d bytes, want 272", bpf.EventSize)
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
		s, err := bpf.LoadState(bpf.StateOptions{Cells: 1 << 12, EventRing: 1 << 20, Machine: kernelflows.Machine(acsm.MachineZeek),
			Linger: never})
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
	ipBytes := func(c *bpf.Cell) [2]uint64 {
		conn, _ := flowtable.ConnFromBytes(c.Conn[:])
		f := connRecord(&conn, capture.ProtoUDP, false)
		return [2]uint64{f.OrigIPBytes, f.RespIPBytes}
	}
	for k, c := range one {
		d := two[k]
		cb, db := ipBytes(&c), ipBytes(&d)
		for i := range 2 {
			if d.Pkts[i] != 2*c.Pkts[i] || db[i] != 2*cb[i] {
				t.Errorf("side %d: two CPUs counted %d packets, %d IP bytes; one %d, %d", i, d.Pkts[i], db[i], c.Pkts[i], cb[i])
			}
		}
	}
	t.Logf("%d frames twice, %d cells exact", len(frames), len(one))
}
