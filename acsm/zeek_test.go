package acsm

import (
	"testing"

	"github.com/flowmon/flowmon/capture"
)

func tcpState(o, r EndpointState) zstate { return zstate{kind: kindTCP, orig: o, resp: r} }

// TestZeekRules runs one case per row of zeekRules and checks the row
// fired and produced the expected endpoint states; every row must be
// covered.
func TestZeekRules(t *testing.T) {
	cases := []struct {
		rule    string
		s       zstate
		isOrig  bool
		f       capture.TCPFlags
		data    bool
		o, r    EndpointState
		flipped bool
		an      Anomaly
	}{
		{"inactive/orig SYN-ACK", tcpState(Inactive, Inactive), true, fS | fA, false, SynAckSent, Inactive, false, 0},
		{"inactive/orig SYN", tcpState(Inactive, Inactive), true, fS, false, SynSent, Inactive, false, 0},
		{"inactive/resp SYN reversal", tcpState(SynAckSent, Inactive), false, fS, false, Established, Established, true, 0},
		{"inactive/resp SYN answers SYN", tcpState(SynSent, Inactive), false, fS | fA, false, Established, Established, false, 0},
		{"inactive/resp SYN unsolicited", tcpState(Inactive, Inactive), false, fS | fA, false, Inactive, Established, false, 0},
		{"partial SYN after partial", tcpState(Partial, Inactive), true, fS, false, SynSent, Inactive, false, 0},
		{"inactive FIN spontaneous", tcpState(Inactive, Inactive), true, fF | fA, false, Closed, Inactive, false, FinBeforeHandshake},
		{"inactive FIN", tcpState(Inactive, Partial), true, fF | fA, false, Closed, Partial, false, 0},
		{"syn_sent FIN inappropriate", tcpState(SynSent, Inactive), true, fF, false, Closed, Inactive, false, FinBeforeHandshake},
		{"syn_sent FIN", tcpState(SynSent, Established), true, fF | fA, false, Closed, Established, false, 0},
		{"established FIN", tcpState(Established, Established), false, fF | fA, false, Established, Closed, false, 0},
		{"inactive RST", tcpState(SynSent, Inactive), false, fR | fA, false, SynSent, Reset, false, 0},
		{"syn_sent RST", tcpState(SynSent, Inactive), true, fR, false, Reset, Inactive, false, 0},
		{"established RST", tcpState(Established, Established), true, fR | fA, false, Reset, Established, false, 0},
		{"closed RST, peer open", tcpState(Closed, Established), true, fR, false, Reset, Established, false, RstAfterFin},
		{"closed RST, peer closed", tcpState(Closed, Closed), false, fR, false, Closed, Closed, false, RstAfterFin},
		{"inactive/resp ACK of SYN", tcpState(SynSent, Inactive), false, fA, false, SynSent, Inactive, false, 0},
		{"inactive ACK after SYN-ACK", tcpState(Inactive, Established), true, fA, false, Established, Established, false, 0},
		{"inactive midstream", tcpState(Inactive, Inactive), true, fA | capture.PSH, true, Partial, Inactive, false, 0},
		{"syn_sent data", tcpState(SynSent, Established), true, fA, true, SynSent, Established, false, DataBeforeHandshake},
	}
	names := map[string]int{}
	for i, r := range zeekRules {
		names[r.name] = i
	}
	covered := map[int]bool{}
	for _, c := range cases {
		i, ok := names[c.rule]
		if !ok {
			t.Fatalf("case for unknown rule %q", c.rule)
		}
		got, an, fired := zeekStepTCP(c.s, c.isOrig, c.f, c.data)
		if fired&(1<<i) == 0 {
			t.Errorf("%s: rule did not fire (fired %b)", c.rule, fired)
		}
		covered[i] = true
		if got.orig != c.o || got.resp != c.r || got.origIsDst != c.flipped || an != c.an {
			t.Errorf("%s: got orig=%s resp=%s flipped=%v anomaly=%s, want %s %s %v %s",
				c.rule, got.orig, got.resp, got.origIsDst, an, c.o, c.r, c.flipped, c.an)
		}
	}
	for i, r := range zeekRules {
		if !covered[i] {
			t.Errorf("rule %q has no test case", r.name)
		}
	}
}

// TestSequentialPhases checks a packet with several control flags runs
// the phases in Zeek's order (SYN, then FIN, then RST).
func TestSequentialPhases(t *testing.T) {
	got, _, _ := zeekStepTCP(tcpState(Inactive, Inactive), true, fS|fF, false)
	if got.orig != Closed {
		t.Errorf("SYN+FIN from inactive: orig %s, want closed", got.orig)
	}
	got, _, _ = zeekStepTCP(tcpState(Established, Established), true, fF|fR, false)
	if got.orig != Reset {
		t.Errorf("FIN+RST from established: orig %s, want reset", got.orig)
	}
}

func TestConnStateDerivation(t *testing.T) {
	cases := []struct {
		s    zstate
		want ConnState
	}{
		{tcpState(SynSent, Reset), REJ},
		{tcpState(SynAckSent, Reset), REJ},
		{zstate{kind: kindTCP, orig: Reset, resp: Reset}, REJ},
		{zstate{kind: kindTCP, orig: Reset, resp: Reset, data: true}, RSTR},
		{tcpState(Inactive, Reset), RSTRH},
		{tcpState(Partial, Reset), RSTRH},
		{tcpState(Established, Reset), RSTR},
		{zstate{kind: kindTCP, orig: Reset, resp: Inactive, rstos0: true}, RSTOS0},
		{tcpState(Reset, Inactive), OTH},
		{tcpState(Reset, Established), RSTO},
		{tcpState(Closed, Closed), SF},
		{tcpState(Closed, Inactive), SH},
		{tcpState(Closed, Established), S2},
		{tcpState(Inactive, Closed), SHR},
		{tcpState(Established, Closed), S3},
		{tcpState(SynSent, Inactive), S0},
		{tcpState(Established, Established), S1},
		{tcpState(Partial, Partial), OTH},
		{zstate{kind: kindUDP, orig: Active, resp: Active}, SF},
		{zstate{kind: kindUDP, orig: Active}, S0},
		{zstate{kind: kindUDP, resp: Active}, SHR},
		{zstate{kind: kindOther, orig: Active}, OTH},
	}
	for _, c := range cases {
		if got := c.s.connState(); got != c.want {
			t.Errorf("%+v: conn_state %s, want %s", c.s, got, c.want)
		}
	}
}

// TestCompiledTableMatchesStep checks every cell of the compiled table
// against a direct run of the step function.
func TestCompiledTableMatchesStep(t *testing.T) {
	m := zeekMachine
	for v := 0; v < m.values; v++ {
		s := m.zs[v]
		for in := 0; in < numInputs; in++ {
			isOrig, data, f := in&0x80 != 0, in&0x40 != 0, capture.TCPFlags(in&0x3F)
			var want zstate
			var an Anomaly
			if s.kind == kindTCP {
				want, an, _ = zeekStepTCP(s, isOrig, f, data)
			} else {
				want = zeekStepOther(s, isOrig)
			}
			tr := m.next[v*numInputs+in]
			if m.zs[tr.next] != want || tr.anomaly != an || tr.ends != (!s.terminal() && want.terminal()) {
				t.Fatalf("value %d %+v input %#x: table gives %+v, step gives %+v", v, s, in, m.zs[tr.next], want)
			}
		}
	}
}

// TestFlagsMachine checks the paper's machine on every value and input:
// the next value is the packet's flags with the orientation kept, and the
// flow ends on a RST or on a FIN after a FIN.
func TestFlagsMachine(t *testing.T) {
	m := flagsMachine
	for v := 0; v < m.values; v++ {
		for in := 0; in < numInputs; in++ {
			f := capture.TCPFlags(in & 0x3F)
			tr := m.next[v*numInputs+in]
			if want := uint16(v&0x40) | uint16(f); tr.next != want {
				t.Fatalf("value %#x input %#x: next %#x, want %#x", v, in, tr.next, want)
			}
			prev := capture.TCPFlags(v & 0x3F)
			ends := (f&fR != 0 || (f&fF != 0 && prev&fF != 0)) && prev&fR == 0
			if tr.ends != ends {
				t.Fatalf("value %#x input %#x: ends %v, want %v", v, in, tr.ends, ends)
			}
		}
	}
	tr, _ := New(Config{Backend: BackendExact, Machine: MachineFlags, Capacity: 10})
	_, ended := run(t, tr, capture.ProtoTCP, cli, srv, []step{{true, syn, 0}, {false, synack, 0}, {true, finack, 0}, {false, finack, 0}})
	if ended == nil || ended.State != SF {
		t.Fatalf("FIN after FIN: ended %+v", ended)
	}
}
