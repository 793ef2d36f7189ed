//go:build linux

package kernelflows_test

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/bpf"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/testutil/bpftest"
	"github.com/flowmon/flowmon/pipeline/flowtable"
	"github.com/flowmon/flowmon/pipeline/kernelflows"
)

// tcpFrame is an Ethernet frame of n bytes holding an IPv4 TCP segment
// from 10.0.0.1:40000 to 10.0.0.2:22 with the ACK flag, whose IP total
// length is ipLen (0: left for the NIC, as TSO leaves it).
func tcpFrame(n, ipLen int) []byte {
	f := make([]byte, n)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(ipLen))
	ip[8], ip[9] = 64, 6
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	tcp := ip[20:]
	binary.BigEndian.PutUint16(tcp[0:], 40000)
	binary.BigEndian.PutUint16(tcp[2:], 22)
	tcp[12], tcp[13] = 5<<4, 0x10
	return f
}

// TestStateLongFrames: the replay program takes frames past the test
// run's linear part (GRO's and TSO's, up to MaxRunFrame) and takes
// their length from the IP header, or from the frame's length where the
// IP header leaves it 0, as capture.Decode does; a longer frame is
// Whole, and counted.
func TestStateLongFrames(t *testing.T) {
	bpftest.Require(t)
	s, err := bpf.LoadState(bpf.StateOptions{Cells: 16, EventRing: 1 << 16, Machine: kernelflows.Machine(acsm.MachineZeek), Linger: never})
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			t.Fatalf("%+v", ve)
		}
		t.Fatal(err)
	}
	defer s.Close()
	var buf []byte
	var want uint64
	for i, c := range []struct {
		n, ipLen int
		v        bpf.Verdict
	}{
		{100, 86, bpf.Kept},
		{9000, 8986, bpf.Kept},
		{65549, 65535, bpf.Kept},
		{bpf.MaxRunFrame, 0, bpf.Kept},
		{bpf.MaxRunFrame + 1, 0, bpf.Whole},
	} {
		f := tcpFrame(c.n, c.ipLen)
		v, err := s.Run(f, int64(i+1)*1e6, &buf)
		if err != nil {
			t.Fatalf("%d-byte frame: %v", c.n, err)
		}
		if v != c.v {
			t.Errorf("%d-byte frame: verdict %d, want %d", c.n, v, c.v)
		}
		if v == bpf.Kept {
			var p capture.Packet
			if r := capture.Decode(&p, capture.LinkEthernet, f, len(f), time.Unix(0, 0)); r != capture.ReasonNone {
				t.Fatalf("%d-byte frame: %v", c.n, r)
			}
			want += uint64(p.IPLen)
		}
	}
	var got uint64
	if err := s.Cells(func(_ [40]byte, c bpf.Cell) bool {
		conn, _ := flowtable.ConnFromBytes(c.Conn[:])
		f := connRecord(&conn, 6, false)
		got = f.OrigIPBytes + f.RespIPBytes
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("IP bytes %d, want %d", got, want)
	}
	sc, err := s.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if sc.Seen != 5 || sc.Counted != 4 || sc.Whole != 1 {
		t.Errorf("counters seen %d, counted %d, whole %d: want 5, 4, 1", sc.Seen, sc.Counted, sc.Whole)
	}
}

// segment is a 54-byte frame of a TCP segment with flags, from the
// client (10.0.0.1:40000) to the server (10.0.0.2:22) or back.
func segment(flags byte, fromServer bool) []byte {
	f := tcpFrame(54, 40)
	ip := f[14:]
	ip[33] = flags
	if fromServer {
		copy(ip[12:], []byte{10, 0, 0, 2, 10, 0, 0, 1})
		binary.BigEndian.PutUint16(ip[20:], 22)
		binary.BigEndian.PutUint16(ip[22:], 40000)
	}
	return f
}

// TestStateAnswered: a flow opened by a bare SYN sends EventAnswered
// once, at the SYN-ACK that moves it out of S0, with the cell after that
// packet; a flow that never was in S0 sends none.
func TestStateAnswered(t *testing.T) {
	bpftest.Require(t)
	m := kernelflows.Machine(acsm.MachineZeek)
	tab := acsm.MachineTables(acsm.MachineZeek)
	m.S0 = make([]bool, len(m.Info))
	for v := range m.S0 {
		m.S0[v] = tab.Conn[v] == acsm.S0
	}
	s, err := bpf.LoadState(bpf.StateOptions{Cells: 16, EventRing: 1 << 16, Machine: m, Linger: never})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rd, err := s.NewEventReader()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	const syn, ack = 0x02, 0x10
	var buf []byte
	for i, f := range [][]byte{segment(syn, false), segment(syn|ack, true), segment(ack, false), segment(ack, true)} {
		if v, err := s.Run(f, int64(i+1)*1e6, &buf); err != nil || v != bpf.Kept {
			t.Fatalf("frame %d: %v, %v", i, v, err)
		}
	}
	var got []uint8
	var ev bpf.Event
	rd.SetDeadline(time.Now())
	for {
		r, err := rd.Read()
		if err != nil {
			break
		}
		if err := bpf.ParseEvent(r.RawSample, &ev); err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Type)
		if ev.Type == bpf.EventAnswered {
			if !ev.Answered || ev.Last != 2e6 || ev.Pkts != [2]uint64{1, 1} || tab.Conn[ev.Value] == acsm.S0 {
				t.Errorf("answered event's cell %+v: want the state after the SYN-ACK, out of S0", ev.Cell)
			}
		}
	}
	if want := []uint8{bpf.EventStart, bpf.EventAnswered}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	sc, err := s.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if sc.Answered != 1 || sc.NewFlows != 1 {
		t.Errorf("counters answered %d, new flows %d: want 1, 1", sc.Answered, sc.NewFlows)
	}
}

// TestStateDedup: a frame again within the duplicate window is counted a
// duplicate and left out of its cell (its verdict Kept: handled); after
// the window, or with another payload byte among those the fingerprint
// takes, it counts. The window holds a fingerprint for the window at
// least and 1.25 windows at most, and only so long.
func TestStateDedup(t *testing.T) {
	bpftest.Require(t)
	const w = 50 * time.Millisecond
	s, err := bpf.LoadState(bpf.StateOptions{Cells: 16, EventRing: 1 << 16, Machine: kernelflows.Machine(acsm.MachineZeek), Linger: never,
		DedupSlots: 1000, DedupWindow: w, DedupPayloadBytes: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data := func(b byte) []byte {
		f := tcpFrame(64, 50)
		f[54+3], f[54+5] = b, 0xee // the fourth payload byte is in the fingerprint, the sixth not
		return f
	}
	var buf []byte
	for i, c := range []struct {
		f   []byte
		at  time.Duration
		dup bool
	}{
		{data(1), 0, false},
		{data(1), time.Millisecond, true},
		{data(2), 2 * time.Millisecond, false},
		{data(1), w - time.Millisecond, true},
		{data(1), w * 5 / 4, false}, // past 1.25 windows: held no longer
		{data(1), w*5/4 + time.Millisecond, true},
		// The same frame sent again 32 windows later (128 ticks of a
		// quarter window: where a 7-bit tick would wrap) is no duplicate.
		{data(3), 3 * w, false},
		{data(3), 35 * w, false},
	} {
		before, err := s.Counters()
		if err != nil {
			t.Fatal(err)
		}
		if v, err := s.Run(c.f, int64(time.Hour+c.at), &buf); err != nil || v != bpf.Kept {
			t.Fatalf("frame %d: %v, %v", i, v, err)
		}
		after, err := s.Counters()
		if err != nil {
			t.Fatal(err)
		}
		if dup := after.Duplicates > before.Duplicates; dup != c.dup || after.Counted+after.Duplicates != before.Counted+before.Duplicates+1 {
			t.Errorf("frame %d at %v: duplicate %v, want %v (counters %+v)", i, c.at, dup, c.dup, after)
		}
	}
	if err := s.ClearDedup(); err != nil {
		t.Fatal(err)
	}
	before, _ := s.Counters()
	if _, err := s.Run(data(3), int64(time.Hour+35*w+time.Millisecond), &buf); err != nil {
		t.Fatal(err)
	}
	if after, _ := s.Counters(); after.Duplicates != before.Duplicates {
		t.Errorf("a duplicate after ClearDedup")
	}
}
