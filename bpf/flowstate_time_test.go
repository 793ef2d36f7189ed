//go:build linux

package bpf_test

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf/ringbuf"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/bpf"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/testutil/bpftest"
)

// TCP flags for synthetic segments.
const (
	tFIN = 0x01
	tSYN = 0x02
	tRST = 0x04
	tACK = 0x10
)

// ipv4Frame is an Ethernet frame of an IPv4 packet from 10.0.0.1 to
// 10.0.0.2 (or back, when back) carrying l4 and payload bytes of zeros.
func ipv4Frame(back bool, proto uint8, l4 []byte, payload int) []byte {
	f := make([]byte, 14+20, 14+20+len(l4)+payload)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+len(l4)+payload))
	binary.BigEndian.PutUint16(ip[4:], 7)
	ip[8], ip[9] = 64, proto
	src, dst := []byte{10, 0, 0, 1}, []byte{10, 0, 0, 2}
	if back {
		src, dst = dst, src
	}
	copy(ip[12:], src)
	copy(ip[16:], dst)
	f = append(f, l4...)
	return append(f, make([]byte, payload)...)
}

// tcpSeg is a TCP segment between client port cport and server port 80.
func tcpSeg(cport uint16, back bool, flags uint8, seq, ack uint32, payload int) []byte {
	h := make([]byte, 20)
	sp, dp := cport, uint16(80)
	if back {
		sp, dp = dp, sp
	}
	binary.BigEndian.PutUint16(h[0:], sp)
	binary.BigEndian.PutUint16(h[2:], dp)
	binary.BigEndian.PutUint32(h[4:], seq)
	binary.BigEndian.PutUint32(h[8:], ack)
	h[12], h[13] = 0x50, flags
	binary.BigEndian.PutUint16(h[14:], 65535)
	return ipv4Frame(back, 6, h, payload)
}

// udpDgram is a UDP datagram between client port cport and server port 53.
func udpDgram(cport uint16, back bool) []byte {
	h := make([]byte, 8)
	sp, dp := cport, uint16(53)
	if back {
		sp, dp = dp, sp
	}
	binary.BigEndian.PutUint16(h[0:], sp)
	binary.BigEndian.PutUint16(h[2:], dp)
	binary.BigEndian.PutUint16(h[4:], 8+20)
	return ipv4Frame(back, 17, h, 20)
}

// timedState runs frames through a flow state and collects its events.
type timedState struct {
	t   *testing.T
	s   *bpf.State
	rd  *ringbuf.Reader
	buf []byte
	// base is added to each time run is given: a test's scenarios each
	// start at 0 after the last, as the program's clock goes only on.
	base time.Duration
}

// openTimed loads a flow state with opt and its event reader, both
// closed when t ends.
func openTimed(t *testing.T, opt bpf.StateOptions) *timedState {
	t.Helper()
	bpftest.Require(t)
	s, err := bpf.LoadState(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	rd, err := s.NewEventReader()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	return &timedState{t: t, s: s, rd: rd}
}

func (ts *timedState) run(frame []byte, at time.Duration) {
	ts.t.Helper()
	v, err := ts.s.Run(frame, int64(time.Hour+ts.base+at), &ts.buf)
	if err != nil {
		ts.t.Fatal(err)
	}
	if v != bpf.Kept {
		ts.t.Fatalf("verdict %d at %v, want Kept", v, at)
	}
}

// events returns the events sent since the last call.
func (ts *timedState) events() []bpf.Event {
	ts.t.Helper()
	var evs []bpf.Event
	ts.rd.SetDeadline(time.Now())
	for {
		r, err := ts.rd.Read()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return evs
		}
		if err != nil {
			ts.t.Fatal(err)
		}
		var e bpf.Event
		if err := bpf.ParseEvent(r.RawSample, &e); err != nil {
			ts.t.Fatal(err)
		}
		evs = append(evs, e)
	}
}

// expect checks the events since the last call by type and reason.
func (ts *timedState) expect(what string, want ...[2]uint8) []bpf.Event {
	ts.t.Helper()
	evs := ts.events()
	ok := len(evs) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = evs[i].Type == want[i][0] && evs[i].Reason == want[i][1]
	}
	if !ok {
		var got [][2]uint8
		for _, e := range evs {
			got = append(got, [2]uint8{e.Type, e.Reason})
		}
		ts.t.Errorf("%s: events (type, reason) %v, want %v", what, got, want)
	}
	return evs
}

func key(frame []byte) [40]byte {
	var p capture.Packet
	opts := capture.DefaultDecodeOptions()
	opts.Decode(&p, 1, frame, len(frame), time.Time{})
	var k [40]byte
	p.Key.PutBinary(&k)
	return k
}

var (
	start   = [2]uint8{bpf.EventStart, 0}
	end     = [2]uint8{bpf.EventEnd, 0}
	interim = [2]uint8{bpf.EventInterim, 0}
	idle    = [2]uint8{bpf.EventDone, bpf.ReasonIdle}
	linger  = [2]uint8{bpf.EventDone, bpf.ReasonLinger}
	reused  = [2]uint8{bpf.EventDone, bpf.ReasonReused}
)

// TestStateTime follows flows of synthetic frames through the flow
// state's packet-time rules, flowtable.Table's: a flow idle past its
// timeout (10 s for a one-sided flow, 60 s for one both sides spoke in)
// is done (DONE, idle) at its 5-tuple's next packet, which starts another
// flow; an ended flow counts its stragglers within the linger (5 s) and
// is done (DONE, linger) at the first packet after it; a SYN after a
// side closed is a reuse (DONE, reused, then START); an open flow gets
// an INTERIM event at each active timeout (30 s). Take removes a cell and
// returns it whole.
func TestStateTime(t *testing.T) {
	ts := openTimed(t, bpf.StateOptions{Cells: 64, EventRing: 1 << 16, Machine: stateMachine(acsm.MachineZeek),
		IdleNew: 10 * time.Second, IdleEstablished: 60 * time.Second, ActiveTimeout: 30 * time.Second})
	s := ts.s
	sec := time.Second

	// Idle: a one-sided UDP flow times out after IdleNew, one both sides
	// spoke in after IdleEstablished.
	ts.run(udpDgram(1000, false), 0)
	ts.expect("a new flow", start)
	ts.run(udpDgram(1000, false), 9*sec)
	ts.expect("within IdleNew")
	ts.run(udpDgram(1000, false), 19*sec)
	evs := ts.expect("past IdleNew", idle, start)
	if len(evs) == 2 && (evs[0].Pkts != [2]uint64{2, 0} || evs[0].First != int64(time.Hour) || evs[1].Pkts != [2]uint64{1, 0} ||
		evs[1].Starts != 2 || evs[1].First != int64(time.Hour+19*sec)) {
		t.Errorf("idle: DONE %+v, START %+v", evs[0].Cell, evs[1].Cell)
	}
	ts.run(udpDgram(1000, true), 20*sec) // a reply: established
	ts.expect("a reply")
	ts.run(udpDgram(1000, false), 75*sec)
	ts.expect("past IdleNew, within IdleEstablished (and past the active timeout)", interim)

	// Interim: the active timeout counts from the flow's first packet.
	ts.base += 100 * sec
	ts.run(udpDgram(2000, false), 0)
	ts.run(udpDgram(2000, true), 9*sec)
	ts.run(udpDgram(2000, false), 29*sec)
	ts.expect("before the active timeout", start)
	ts.run(udpDgram(2000, true), 31*sec)
	evs = ts.expect("at the active timeout", interim)
	if len(evs) == 1 && (evs[0].InterimAt != 31 || evs[0].Pkts != [2]uint64{2, 2}) {
		t.Errorf("interim: %+v", evs[0].Cell)
	}
	ts.run(udpDgram(2000, false), 60*sec)
	ts.expect("before the next")
	ts.run(udpDgram(2000, false), 61*sec)
	evs = ts.expect("at the next", interim)
	if len(evs) == 1 && evs[0].InterimAt != 61 {
		t.Errorf("second interim: %+v", evs[0].Cell)
	}

	// End, a straggler, the linger.
	ts.base += 100 * sec
	ts.run(tcpSeg(3000, false, tSYN, 100, 0, 0), 0)
	ts.run(tcpSeg(3000, true, tSYN|tACK, 500, 101, 0), sec/10)
	ts.run(tcpSeg(3000, false, tACK, 101, 501, 0), 2*sec/10)
	ts.run(tcpSeg(3000, false, tRST, 101, 0, 0), 3*sec/10)
	evs = ts.expect("a reset", start, end)
	k := key(tcpSeg(3000, false, tACK, 0, 0, 0))
	ts.run(tcpSeg(3000, true, tACK, 501, 101, 0), 4*sec)
	ts.expect("a straggler")
	var c bpf.Cell
	err := s.Cells(func(key [40]byte, got bpf.Cell) bool {
		if key == k {
			c = got
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 2 && (c.Pkts != [2]uint64{3, 2} || !c.Ended || c.Since != int64(time.Hour+ts.base+3*sec/10) ||
		c.Value != evs[1].Value || c.FirstSeq != 100 || c.FirstFlags != tSYN || c.FirstIPID != 7) {
		t.Errorf("after a straggler: %+v (END: %+v)", c, evs[1].Cell)
	}
	ts.run(tcpSeg(3000, true, tACK, 501, 101, 0), 5*sec+3*sec/10)
	evs = ts.expect("after the linger", linger, start)
	if len(evs) == 2 && (evs[0].Pkts != [2]uint64{3, 2} || evs[1].Pkts != [2]uint64{0, 1} || evs[1].Starts != 2) {
		t.Errorf("after the linger: DONE %+v, START %+v", evs[0].Cell, evs[1].Cell)
	}

	// Reuse: a SYN at a new sequence number after the client's FIN.
	ts.base += 100 * sec
	ts.run(tcpSeg(4000, false, tSYN, 100, 0, 0), 0)
	ts.run(tcpSeg(4000, true, tSYN|tACK, 500, 101, 0), sec/10)
	ts.run(tcpSeg(4000, false, tACK, 101, 501, 0), 2*sec/10)
	ts.run(tcpSeg(4000, false, tFIN|tACK, 101, 501, 0), 3*sec/10)
	ts.expect("a FIN", start)
	ts.run(tcpSeg(4000, false, tSYN, 9000, 0, 0), sec)
	evs = ts.expect("a SYN after the FIN", reused, start)
	if len(evs) == 2 && (evs[0].Pkts != [2]uint64{3, 1} || evs[1].Pkts != [2]uint64{1, 0} || evs[1].FirstSeq != 9000) {
		t.Errorf("reuse: DONE %+v, START %+v", evs[0].Cell, evs[1].Cell)
	}

	// A packet whose time goes back is at the clock (the latest time
	// seen) for the timeouts, at its own time in the flow's times: it
	// neither times the flow out nor leaves it looking idle since then.
	ts.base += 100 * sec
	ts.run(udpDgram(7000, false), 0)
	ts.run(udpDgram(7000, false), 9*sec)
	ts.run(udpDgram(7000, false), -50*sec)
	ts.run(udpDgram(7000, false), 15*sec)
	ts.expect("times going back", start)
	ts.run(udpDgram(7000, false), 26*sec)
	evs = ts.expect("idle past IdleNew on the clock", idle, start)
	if len(evs) == 2 && (evs[0].Pkts != [2]uint64{4, 0} || evs[0].Last != int64(time.Hour+ts.base+15*sec)) {
		t.Errorf("times going back: DONE %+v", evs[0].Cell)
	}

	// Take: the cell once, then none.
	k = key(tcpSeg(4000, false, tACK, 0, 0, 0))
	c, ok, err := s.Take(k)
	if err != nil || !ok || c.Starts != 2 || c.Pkts != [2]uint64{1, 0} {
		t.Errorf("Take: %+v, %v, %v", c, ok, err)
	}
	if _, ok, err := s.Take(k); ok || err != nil {
		t.Errorf("Take again: %v, %v", ok, err)
	}
	// Cells with a Take of each cell it gives: each once, then none.
	n, taken := 0, map[[40]byte]bool{}
	if err := s.Cells(func(key [40]byte, _ bpf.Cell) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	err = s.Cells(func(key [40]byte, _ bpf.Cell) bool {
		if _, ok, err := s.Take(key); !ok || err != nil || taken[key] {
			t.Errorf("Take in Cells: %v, %v, taken before %v", ok, err, taken[key])
		}
		taken[key] = true
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	left := 0
	if err := s.Cells(func([40]byte, bpf.Cell) bool { left++; return true }); err != nil {
		t.Fatal(err)
	}
	if n != 4 || len(taken) != n || left != 0 {
		t.Errorf("Cells: %d cells, %d taken, %d left", n, len(taken), left)
	}
	sc, err := s.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if sc.EventsLost != 0 || sc.RecordsLost != 0 || sc.Done != 4 || sc.Interims != 3 {
		t.Errorf("counters %+v", sc)
	}
}

// stateMachine is machine k with its idle tiers, as
// pipeline/kernelflows.Machine loads it but without its S0 values (no
// answered events), which this package's tests may not import.
func stateMachine(k acsm.MachineKind) bpf.StateMachine {
	t := acsm.MachineTables(k)
	idleNew := make([]bool, len(t.Info))
	for v, s := range t.Conn {
		idleNew[v] = s == acsm.S0 || s == acsm.SH || s == acsm.SHR || s == acsm.ConnUnknown
	}
	return bpf.StateMachine{Next: t.Next, Info: t.Info, IdleNew: idleNew, Start: t.Start, ServerPorts: t.ServerPorts}
}

// TestStateAttempt: with an AttemptDelay, a flow that began with a pure
// SYN and is unanswered (S0) ends that long after the SYN, its
// originator's SYNs sent again in the meantime putting nothing off (as
// flowtable.Table and Zeek's attempt timer do): the packet after the
// delay is done with it (DONE, idle) and starts another flow. An
// answered flow is not an attempt; a flow that began otherwise is not
// either.
func TestStateAttempt(t *testing.T) {
	bpftest.Require(t)
	m := stateMachine(acsm.MachineZeek)
	tab := acsm.MachineTables(acsm.MachineZeek)
	m.S0 = make([]bool, len(tab.Conn))
	for v, c := range tab.Conn {
		m.S0[v] = c == acsm.S0
	}
	ts := openTimed(t, bpf.StateOptions{Cells: 64, EventRing: 1 << 16, Machine: m,
		IdleNew: 60 * time.Second, IdleEstablished: 3600 * time.Second, AttemptDelay: 5 * time.Second})
	sec := time.Second

	ts.run(tcpSeg(5000, false, tSYN, 100, 0, 0), 0)
	ts.run(tcpSeg(5000, false, tSYN, 100, 0, 0), 3*sec)
	ts.expect("an unanswered SYN, sent again", start)
	ts.run(tcpSeg(5000, false, tACK, 101, 1, 10), 5*sec)
	evs := ts.expect("the originator's packet after the delay", idle, start)
	if len(evs) == 2 && (evs[0].Pkts != [2]uint64{2, 0} || evs[1].Pkts != [2]uint64{1, 0} || evs[1].Attempt) {
		t.Errorf("attempt: DONE %+v, START %+v", evs[0].Cell, evs[1].Cell)
	}

	ts.base += 100 * sec
	ts.run(tcpSeg(6000, false, tSYN, 100, 0, 0), 0)
	ts.run(tcpSeg(6000, true, tSYN|tACK, 500, 101, 0), 4*sec)
	ts.run(tcpSeg(6000, false, tACK, 101, 501, 0), 9*sec)
	ts.expect("an answered SYN", start, [2]uint8{bpf.EventAnswered, 0})
}
