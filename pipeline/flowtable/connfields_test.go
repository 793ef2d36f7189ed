package flowtable

import (
	"net/netip"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/record"
)

// seg is one hand-built packet of a flow between A (10.0.0.1:40000, Key.Src)
// and B (10.0.0.2:80, Key.Dst).
type seg struct {
	fromB    bool
	flags    capture.TCPFlags
	seq, ack uint32
	n        uint32 // payload length
	win      uint16
}

const (
	fS   = capture.SYN
	fA   = capture.ACK
	fF   = capture.FIN
	fR   = capture.RST
	fSA  = fS | fA
	fFA  = fF | fA
	fPA  = capture.PSH | fA
	isnA = 1000
	isnB = 5000
)

var histKey = capture.Key{Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"),
	SrcPort: 40000, DstPort: 80, Proto: capture.ProtoTCP}

func (s seg) packet(proto uint8) capture.Packet {
	k := histKey
	k.Proto = proto
	hdr := uint32(20)
	if proto == capture.ProtoUDP {
		hdr = 8
	}
	win := s.win
	if win == 0 && s.flags != 0 {
		win = 65535
	}
	if s.win == 1 { // 1 stands for a zero window in the tables
		win = 0
	}
	return capture.Packet{Key: k, Reversed: s.fromB, HasTCP: proto == capture.ProtoTCP, Flags: s.flags,
		Seq: s.seq, Ack: s.ack, Window: win, PayloadLen: s.n, IPLen: uint16(20 + hdr + s.n)}
}

// replayConn feeds the segments to one flow's fields; origIsB says B is
// the originator (the roles are fixed for the whole flow, as the first
// packet's flip decided them).
func replayConn(proto uint8, origIsB bool, segs []seg) *Conn {
	var c Conn
	for i, s := range segs {
		p := s.packet(proto)
		c.Observe(&p, origIsB, i == 0)
	}
	return &c
}

// handshake and a data exchange: A sends 100 bytes, B answers 200.
var exchange = []seg{
	{flags: fS, seq: isnA},
	{fromB: true, flags: fSA, seq: isnB, ack: isnA + 1},
	{flags: fA, seq: isnA + 1, ack: isnB + 1},
	{flags: fPA, seq: isnA + 1, ack: isnB + 1, n: 100},
	{fromB: true, flags: fA, seq: isnB + 1, ack: isnA + 101},
	{fromB: true, flags: fPA, seq: isnB + 1, ack: isnA + 101, n: 200},
	{flags: fA, seq: isnA + 101, ack: isnB + 201},
}

func cat(parts ...[]seg) []seg {
	var out []seg
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestHistoryTCP(t *testing.T) {
	finBoth := []seg{
		{flags: fFA, seq: isnA + 101, ack: isnB + 201},
		{fromB: true, flags: fFA, seq: isnB + 201, ack: isnA + 102},
		{flags: fA, seq: isnA + 102, ack: isnB + 202},
	}
	for _, c := range []struct {
		name           string
		origIsB        bool
		segs           []seg
		history        string
		origB, respB   uint64
		missed         uint64
		origIP, respIP uint64
	}{
		{name: "handshake only", segs: exchange[:3], history: "ShA", origIP: 80, respIP: 40},
		{name: "data", segs: exchange, history: "ShADad", origB: 100, respB: 200, origIP: 260, respIP: 320},
		{name: "FIN both sides", segs: cat(exchange, finBoth), history: "ShADadFf", origB: 100, respB: 200,
			origIP: 340, respIP: 360},
		{name: "responder FIN first", segs: cat(exchange, []seg{
			{fromB: true, flags: fFA, seq: isnB + 201, ack: isnA + 101},
			{flags: fFA, seq: isnA + 101, ack: isnB + 202},
		}), history: "ShADadfF", origB: 100, respB: 200, origIP: 300, respIP: 360},
		{name: "rejected", segs: []seg{
			{flags: fS, seq: isnA},
			{fromB: true, flags: fR | fA, seq: 0, ack: isnA + 1},
		}, history: "Sr", origIP: 40, respIP: 40},
		{name: "originator resets", segs: cat(exchange, []seg{{flags: fR, seq: isnA + 101}}),
			history: "ShADadR", origB: 100, respB: 200, origIP: 300, respIP: 320},
		{name: "RST retransmitted at the same seq, then a new one", segs: cat(exchange, []seg{
			{fromB: true, flags: fR, seq: isnB + 201},
			{fromB: true, flags: fR, seq: isnB + 201},
			{fromB: true, flags: fR, seq: isnB + 9999},
		}), history: "ShADadrr", origB: 100, respB: 200, origIP: 260, respIP: 440},
		// A new ISN restarts the sequence space while the side has not
		// closed (Zeek's SYN_seq_jump), so only after the RST does the
		// second SYN count as a new one.
		{name: "SYN retransmitted, at a new ISN, and after a RST", segs: []seg{
			{flags: fS, seq: isnA}, {flags: fS, seq: isnA}, {flags: fS, seq: isnA + 7},
			{flags: fR, seq: isnA + 8}, {flags: fS, seq: isnA + 99},
		}, history: "SRS", origIP: 200},
		{name: "SYN+FIN and FIN+RST", segs: []seg{
			{flags: fS | fF, seq: isnA},
			{fromB: true, flags: fF | fR, seq: isnB},
		}, history: "Qi", origIP: 40, respIP: 40},
		{name: "retransmitted data", segs: cat(exchange, []seg{
			{flags: fPA, seq: isnA + 1, ack: isnB + 201, n: 100},
		}), history: "ShADadT", origB: 100, respB: 200, origIP: 400, respIP: 320},
		{name: "zero window", segs: cat(exchange, []seg{
			{fromB: true, flags: fA, seq: isnB + 201, ack: isnA + 101, win: 1},
		}), history: "ShADadw", origB: 100, respB: 200, origIP: 260, respIP: 360},
		{name: "content gap acknowledged", segs: cat(exchange, []seg{
			// A's bytes 101-200 are never seen; B acks them.
			{flags: fPA, seq: isnA + 201, ack: isnB + 201, n: 100},
			{fromB: true, flags: fA, seq: isnB + 201, ack: isnA + 301},
		}), history: "ShADadG", origB: 300, respB: 200, missed: 100, origIP: 400, respIP: 360},
		// The late segment is below the highest sequence seen: Zeek counts
		// it a retransmission (T), and the hole is no gap.
		{name: "gap filled before the ack", segs: cat(exchange, []seg{
			{flags: fPA, seq: isnA + 201, ack: isnB + 201, n: 100},
			{flags: fPA, seq: isnA + 101, ack: isnB + 201, n: 100},
			{fromB: true, flags: fA, seq: isnB + 201, ack: isnA + 301},
		}), history: "ShADadT", origB: 300, respB: 200, origIP: 540, respIP: 360},
		{name: "partial flow: no SYN, no gap reported", segs: []seg{
			{flags: fPA, seq: isnA, ack: isnB, n: 10},
			{fromB: true, flags: fA, seq: isnB, ack: isnA + 500},
		}, history: "Da", origB: 500, origIP: 50, respIP: 40},
		{name: "flipped at the first packet", origIsB: true, segs: []seg{
			{flags: fSA, seq: isnA, ack: isnB + 1},
			{fromB: true, flags: fA, seq: isnB + 1, ack: isnA + 1},
		}, history: "^hA", origIP: 40, respIP: 40},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := replayConn(capture.ProtoTCP, c.origIsB, c.segs)
			o, r := &f.side[0], &f.side[1]
			if c.origIsB {
				o, r = r, o
			}
			got := []uint64{o.bytes(capture.ProtoTCP), r.bytes(capture.ProtoTCP), uint64(o.missed + r.missed), o.ipBytes, r.ipBytes}
			want := []uint64{c.origB, c.respB, c.missed, c.origIP, c.respIP}
			if h := f.letters(); h != c.history || !slicesEqual(got, want) {
				t.Errorf("history %q, bytes/missed/ip %v; want %q, %v", h, got, c.history, want)
			}
		})
	}
}

func slicesEqual(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A flip after the first packet records the packet's letters with the old
// roles, then '^' (Zeek flips in its state machine, after the history).
func TestHistoryFlipMidFlow(t *testing.T) {
	var c Conn
	p := seg{flags: fSA, seq: isnA, ack: isnB + 1}.packet(capture.ProtoTCP)
	c.Observe(&p, false, true) // A sent a SYN-ACK and was taken as originator
	q := seg{fromB: true, flags: fS, seq: isnB}.packet(capture.ProtoTCP)
	c.Observe(&q, true, false) // B's SYN: the roles flip
	r := seg{flags: fA, seq: isnA + 1, ack: isnB + 1}.packet(capture.ProtoTCP)
	c.Observe(&r, true, false)
	// The flip keeps Zeek's role-keyed seen bits: A's ACK is now the
	// responder's first 'a'.
	if h := c.letters(); h != "Hs^a" {
		t.Errorf("history %q, want Hs^a", h)
	}
}

// Retransmissions are recorded at the 1st, 10th and 100th.
func TestHistoryScaledLetters(t *testing.T) {
	segs := exchange
	for range 100 {
		segs = append(segs, seg{flags: fPA, seq: isnA + 1, ack: isnB + 201, n: 100})
	}
	if h := replayConn(capture.ProtoTCP, false, segs).letters(); h != "ShADadTTT" {
		t.Errorf("history %q, want ShADadTTT", h)
	}
}

func TestHistoryUDPAndICMP(t *testing.T) {
	udp := replayConn(capture.ProtoUDP, false, []seg{{n: 30}, {n: 0}, {fromB: true, n: 120}})
	if h, ob, rb := udp.letters(), udp.side[0].bytes(capture.ProtoUDP), udp.side[1].bytes(capture.ProtoUDP); h != "Dd" || ob != 30 || rb != 120 {
		t.Errorf("udp: history %q, bytes %d/%d; want Dd, 30/120", h, ob, rb)
	}
	icmp := replayConn(capture.ProtoICMP, false, []seg{{n: 56}, {fromB: true, n: 56}})
	if h, ob := icmp.letters(), icmp.side[0].bytes(capture.ProtoICMP); h != "" || ob != 56 {
		t.Errorf("icmp: history %q, bytes %d; want none, 56", h, ob)
	}
}

// The history holds 24 letters; later ones are dropped, not wrapped.
func TestHistoryCap(t *testing.T) {
	var c Conn
	for i := range 40 {
		c.addLetter(hD, i%2 == 0)
	}
	if h := c.letters(); len(h) != histMax || h[:4] != "DdDd" {
		t.Errorf("history %q", h)
	}
}

// The per-packet path of the flow table allocates nothing for a flow it
// holds: the conn fields are updated in place.
func TestFlowTablePacketNoAllocs(t *testing.T) {
	tab := newFlowTable(nil, nil, 16, time.Minute, time.Hour)
	segs := exchange
	pkts := make([]capture.Packet, len(segs))
	ev := acsm.Event{Result: acsm.Found, State: acsm.S1}
	now := time.Unix(1e9, 0)
	for i, s := range segs {
		pkts[i] = s.packet(capture.ProtoTCP)
		pkts[i].Timestamp = now
	}
	tab.Packet(&pkts[0], &acsm.Event{New: true, State: acsm.S0})
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		tab.Packet(&pkts[1+i%(len(pkts)-1)], &ev)
		i++
	}); n != 0 {
		t.Errorf("%.1f allocations per packet", n)
	}
}

// letters is c's history as conn.log spells it.
func (c *Conn) letters() string {
	var h record.History
	c.history(&h)
	return h.String()
}
