package acsm

import (
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
)

var t0 = time.Unix(1_700_000_000, 0)

// flowPkts builds packets of one flow between client c and server s: each
// step is (fromClient, flags, payload).
type step struct {
	fromClient bool
	f          capture.TCPFlags
	payload    uint32
}

func mkPacket(proto uint8, client, server netip.AddrPort, st step, ts time.Time) capture.Packet {
	src, dst := client, server
	if !st.fromClient {
		src, dst = server, client
	}
	k := capture.Key{Src: src.Addr(), Dst: dst.Addr(), SrcPort: src.Port(), DstPort: dst.Port(), Proto: proto}
	c, rev := k.Canonical()
	return capture.Packet{Timestamp: ts, Key: c, Reversed: rev, Hash: c.Hash(), HasTCP: proto == capture.ProtoTCP,
		Flags: st.f, PayloadLen: st.payload}
}

func run(t *testing.T, tr *Tracker, proto uint8, client, server netip.AddrPort, steps []step) (last Event, ended *Event) {
	t.Helper()
	for i, s := range steps {
		p := mkPacket(proto, client, server, s, t0.Add(time.Duration(i)*time.Millisecond))
		ev := tr.Observe(&p)
		if ev.Ended {
			e := ev
			ended = &e
		}
		last = ev
	}
	return last, ended
}

var (
	cli = netip.MustParseAddrPort("10.0.0.9:40000")
	srv = netip.MustParseAddrPort("10.0.0.2:80")
)

const (
	syn    = capture.SYN
	ack    = capture.ACK
	fin    = capture.FIN
	rst    = capture.RST
	synack = capture.SYN | capture.ACK
	finack = capture.FIN | capture.ACK
	psh    = capture.PSH | capture.ACK
)

// connScenarios are packet sequences with Zeek's conn_state for each.
var connScenarios = []struct {
	name  string
	proto uint8
	steps []step
	want  ConnState
	ends  bool
	// flipped: the originator is the server side.
	flipped bool
}{
	{"SF", capture.ProtoTCP, []step{{true, syn, 0}, {false, synack, 0}, {true, ack, 0}, {true, psh, 100}, {false, psh, 200},
		{true, finack, 0}, {false, ack, 0}, {false, finack, 0}}, SF, true, false},
	{"S0", capture.ProtoTCP, []step{{true, syn, 0}, {true, syn, 0}}, S0, false, false},
	{"S1", capture.ProtoTCP, []step{{true, syn, 0}, {false, synack, 0}, {true, ack, 0}, {true, psh, 10}}, S1, false, false},
	{"REJ", capture.ProtoTCP, []step{{true, syn, 0}, {false, rst | ack, 0}}, REJ, true, false},
	{"RSTO", capture.ProtoTCP, []step{{true, syn, 0}, {false, synack, 0}, {true, ack, 0}, {true, rst, 0}}, RSTO, true, false},
	{"RSTR", capture.ProtoTCP, []step{{true, syn, 0}, {false, synack, 0}, {true, ack, 0}, {true, psh, 5}, {false, rst, 0}}, RSTR, true, false},
	{"RSTOS0", capture.ProtoTCP, []step{{true, syn, 0}, {true, rst, 0}}, RSTOS0, true, false},
	{"SH", capture.ProtoTCP, []step{{true, syn, 0}, {true, fin, 0}}, SH, true, false},
	{"S2", capture.ProtoTCP, []step{{true, syn, 0}, {false, synack, 0}, {true, ack, 0}, {true, finack, 0}}, S2, false, false},
	{"S3", capture.ProtoTCP, []step{{true, syn, 0}, {false, synack, 0}, {true, ack, 0}, {false, finack, 0}}, S3, false, false},
	{"OTH midstream", capture.ProtoTCP, []step{{true, psh, 100}, {false, ack, 0}}, OTH, false, false},
	{"RSTRH flipped SYN-ACK", capture.ProtoTCP, []step{{false, synack, 0}, {false, rst, 0}}, RSTRH, true, false},
	{"SHR flipped SYN-ACK", capture.ProtoTCP, []step{{false, synack, 0}, {false, finack, 0}}, SHR, true, false},
	{"UDP SF", capture.ProtoUDP, []step{{true, 0, 30}, {false, 0, 60}}, SF, false, false},
	{"UDP S0", capture.ProtoUDP, []step{{true, 0, 30}, {true, 0, 30}}, S0, false, false},
}

func TestTrackerScenarios(t *testing.T) {
	for _, kind := range []BackendKind{BackendExact, BackendKBF, BackendSBF, BackendFCF, BackendDLeft} {
		for i, keep := range []bool{false, true, false} {
			for _, sc := range connScenarios {
				tr, err := New(Config{Backend: kind, Capacity: 1000, FPRate: 0.001, KeepEnded: keep, NoAging: i == 2})
				if err != nil {
					t.Fatal(err)
				}
				last, ended := run(t, tr, sc.proto, cli, srv, sc.steps)
				got := last.State
				if sc.ends {
					if ended == nil {
						t.Errorf("%s/%s keep=%v: flow did not end", kind, sc.name, keep)
						continue
					}
					got = ended.State
				} else if ended != nil {
					t.Errorf("%s/%s: flow ended as %s", kind, sc.name, ended.State)
				}
				if got != sc.want {
					t.Errorf("%s/%s keep=%v: conn_state %s, want %s", kind, sc.name, keep, got, sc.want)
				}
				if !sc.ends {
					st, _, r := tr.Query(capture.Key{Src: cli.Addr(), Dst: srv.Addr(), SrcPort: cli.Port(), DstPort: srv.Port(), Proto: sc.proto})
					if r != Found || st != sc.want {
						t.Errorf("%s/%s: query gives %s (%s), want %s", kind, sc.name, st, r, sc.want)
					}
				}
			}
		}
	}
}

// TestOrientation checks the originator is stored with the state: a flow
// whose first packet is a SYN-ACK from the server has the client as
// originator.
func TestOrientation(t *testing.T) {
	tr, err := New(Config{Backend: BackendExact, Capacity: 10})
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := run(t, tr, capture.ProtoTCP, cli, srv, []step{{false, synack, 0}, {true, ack, 0}})
	if o := ev.Originator(); o.Src != cli.Addr() || o.SrcPort != cli.Port() {
		t.Errorf("originator %s, want the client %s", o, cli)
	}
	// And when the client (higher address) sends the first SYN.
	tr2, _ := New(Config{Backend: BackendExact, Capacity: 10})
	hi := netip.MustParseAddrPort("192.168.1.1:5555")
	ev, _ = run(t, tr2, capture.ProtoTCP, hi, srv, []step{{true, syn, 0}})
	if o := ev.Originator(); o.Src != hi.Addr() {
		t.Errorf("originator %s, want %s", o, hi)
	}
}

func TestFlagAnomalies(t *testing.T) {
	cases := []struct {
		f    capture.TCPFlags
		want Anomaly
	}{
		{syn | fin, SynFin},
		{syn | rst, SynRst},
		{fin | rst | ack, FinRst},
		{0, NullScan},
		{fin | capture.PSH | capture.URG, XmasScan},
		{synack, 0},
	}
	for _, c := range cases {
		if got := flagAnomalies(c.f); got != c.want {
			t.Errorf("%s: %s, want %s", c.f, got, c.want)
		}
	}
	tr, _ := New(Config{Backend: BackendExact, Capacity: 10})
	_, _ = run(t, tr, capture.ProtoTCP, cli, srv, []step{{true, syn, 0}, {false, synack, 0}, {true, finack, 0}, {true, rst, 0}})
	tr.Flush(t0) // publishes the counts
	if n := tr.Counts().Anomalies["rst_after_fin"]; n != 1 {
		t.Errorf("rst_after_fin = %d, want 1", n)
	}
}

func TestAgingExpiresIdleFlows(t *testing.T) {
	for _, kind := range []BackendKind{BackendExact, BackendKBF, BackendSBF, BackendFCF, BackendDLeft} {
		tr, err := New(Config{Backend: kind, Capacity: 1000, FPRate: 0.01, ShadowRate: -1})
		if err != nil {
			t.Fatal(err)
		}
		p := mkPacket(capture.ProtoTCP, cli, srv, step{true, syn, 0}, t0)
		tr.Observe(&p)
		if _, _, r := tr.QueryHash(p.Hash); r != Found {
			t.Fatalf("%s: new flow not found", kind)
		}
		tr.Flush(t0.Add(30 * time.Second))
		if _, _, r := tr.QueryHash(p.Hash); r != Found {
			t.Fatalf("%s: flow expired before its timeout", kind)
		}
		tr.Flush(t0.Add(61 * time.Second))
		tr.Flush(t0.Add(122 * time.Second))
		if _, _, r := tr.QueryHash(p.Hash); r != Absent {
			t.Errorf("%s: S0 flow still there after two new-flow timeouts", kind)
		}
		if s := tr.Stats(); s.Expired != 1 {
			t.Errorf("%s: expired = %d, want 1", kind, s.Expired)
		}
	}
}

func TestObserveNoAllocs(t *testing.T) {
	for _, kind := range []BackendKind{BackendExact, BackendKBF, BackendSBF, BackendFCF, BackendDLeft} {
		tr, err := New(Config{Backend: kind, Capacity: 1 << 12, FPRate: 0.01, ShadowRate: 1})
		if err != nil {
			t.Fatal(err)
		}
		pk := make([]capture.Packet, 64)
		for i := range pk {
			c := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), 40000)
			pk[i] = mkPacket(capture.ProtoTCP, c, srv, step{i%2 == 0, synack, 0}, t0)
		}
		for i := range pk { // warm: flows exist, the shadow map has room
			tr.Observe(&pk[i])
		}
		i := 0
		if n := testing.AllocsPerRun(500, func() { tr.Observe(&pk[i%len(pk)]); i++ }); n != 0 {
			t.Errorf("%s: Observe allocates %v times", kind, n)
		}
	}
}

// TestRotationNoAllocs drives the filters' generations through many
// rotations: recycling an expired generation (Backend.Reset) must not
// allocate, for kbf's 575 MB arrays no more than for the others.
func TestRotationNoAllocs(t *testing.T) {
	second := Timeouts{New: time.Second, Established: time.Second, Closed: time.Second}
	for _, kind := range []BackendKind{BackendKBF, BackendSBF, BackendFCF, BackendDLeft} {
		tr, err := New(Config{Backend: kind, Capacity: 1 << 12, FPRate: 0.01, Timeouts: second})
		if err != nil {
			t.Fatal(err)
		}
		pk := make([]capture.Packet, 64)
		for i := range pk {
			c := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 2, byte(i >> 8), byte(i)}), 40000)
			pk[i] = mkPacket(capture.ProtoTCP, c, srv, step{true, syn, 0}, t0)
		}
		i := 0
		observe := func() { // 100 ms apart: a rotation every ten packets
			p := &pk[i%len(pk)]
			p.Timestamp = t0.Add(time.Duration(i) * 100 * time.Millisecond)
			tr.Observe(p)
			i++
		}
		for range 100 {
			observe()
		}
		// AllocsPerRun rounds down: each run spans two seconds, so that
		// every run rotates.
		if n := testing.AllocsPerRun(100, func() {
			for range 20 {
				observe()
			}
		}); n != 0 {
			t.Errorf("%s: Observe across rotations allocates %v times", kind, n)
		}
		tr.Flush(t0.Add(time.Duration(i) * 100 * time.Millisecond)) // publishes the counters
		if tr.Stats().Expired == 0 {
			t.Errorf("%s: no generation expired: the test rotated nothing", kind)
		}
	}
}

// TestShadowMeasuresError overloads a small kbf backend: the exact shadow
// (on every flow here) must see the disagreements the filter makes, and a
// right-sized filter must show almost none.
func TestShadowMeasuresError(t *testing.T) {
	for _, c := range []struct {
		capacity int
		wantErr  bool
	}{{100, true}, {20000, false}} {
		tr, err := New(Config{Backend: BackendSBF, Capacity: c.capacity, FPRate: 0.01, ShadowRate: 1})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5000; i++ {
			cl := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 2, byte(i >> 8), byte(i)}), uint16(1024+i))
			run(t, tr, capture.ProtoTCP, cl, srv, []step{{true, syn, 0}, {false, synack, 0}, {true, ack, 0}})
		}
		tr.Flush(t0.Add(time.Second))
		s := tr.Stats().Shadow
		if s.Checks != 15000 {
			t.Errorf("capacity %d: %d shadow checks, want 15000", c.capacity, s.Checks)
		}
		if got := s.ErrorRate() > 0.05; got != c.wantErr {
			t.Errorf("capacity %d: shadow error rate %.4f (%+v)", c.capacity, s.ErrorRate(), s)
		}
	}
}

func TestSamplesNames(t *testing.T) {
	tr, _ := New(Config{Backend: BackendKBF, Capacity: 100, FPRate: 0.01})
	names := map[string]bool{}
	tr.Samples(func(s Sample) { names[s.Name] = true })
	for _, n := range []string{"packets_total", "flows_ended_total", "anomalies_total", "backend_memory_bytes", "shadow_disagreements_total"} {
		if !names[n] {
			t.Errorf("no %s sample", n)
		}
	}
}

// TestFloodKeepsMemory: ten times the configured flows change no
// approximate backend's size; the exact backend stops at its cap.
func TestFloodKeepsMemory(t *testing.T) {
	for _, kind := range []BackendKind{BackendKBF, BackendSBF, BackendFCF, BackendExact, BackendDLeft} {
		tr, err := New(Config{Backend: kind, Capacity: 500, FPRate: 0.01, ExactCap: 1000, ShadowRate: -1})
		if err != nil {
			t.Fatal(err)
		}
		before := tr.Stats().MemoryBytes
		for i := 0; i < 5000; i++ {
			cl := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 3, byte(i >> 8), byte(i)}), 2000)
			p := mkPacket(capture.ProtoTCP, cl, srv, step{true, syn, 0}, t0)
			tr.Observe(&p)
		}
		tr.Flush(t0)
		s := tr.Stats()
		switch {
		case kind == BackendExact && s.LiveFlows > 1000:
			t.Errorf("exact holds %d flows past its cap 1000", s.LiveFlows)
		case kind != BackendExact && s.MemoryBytes != before:
			t.Errorf("%s: memory %d -> %d under a flood", kind, before, s.MemoryBytes)
		}
	}
}

// TestKeepEnded: with KeepEnded the last ACK after both FINs does not
// start a new flow, and a new SYN on the ended 5-tuple does (Zeek's reuse).
func TestKeepEnded(t *testing.T) {
	for _, keep := range []bool{false, true} {
		tr, _ := New(Config{Backend: BackendExact, Capacity: 10, KeepEnded: keep})
		run(t, tr, capture.ProtoTCP, cli, srv, []step{{true, syn, 0}, {false, synack, 0}, {true, ack, 0},
			{true, finack, 0}, {false, finack, 0}, {true, ack, 0}})
		tr.Flush(t0) // publishes the counts
		newFlows := tr.Counts().NewFlows
		if want := map[bool]uint64{false: 2, true: 1}[keep]; newFlows != want {
			t.Errorf("keep=%v: %d flows after the straggler ACK, want %d", keep, newFlows, want)
		}
		ev, _ := run(t, tr, capture.ProtoTCP, cli, srv, []step{{true, syn, 0}})
		if keep && (!ev.New || ev.State != S0) {
			t.Errorf("keep=%v: SYN on an ended flow gives %+v, want a new S0 flow", keep, ev)
		}
	}
}

// TestDifferentialRandomFlows drives random flag sequences over 300 flows
// through every backend at a generous size and checks each event against
// the exact backend's.
func TestDifferentialRandomFlows(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	type pk struct {
		c  netip.AddrPort
		st step
	}
	var seq []pk
	for i := 0; i < 300; i++ {
		c := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 9, byte(i >> 8), byte(i)}), uint16(1024+r.IntN(60000)))
		for j := r.IntN(12); j >= 0; j-- {
			f := capture.TCPFlags(r.IntN(64))
			if r.IntN(3) > 0 {
				f = []capture.TCPFlags{syn, synack, ack, psh, finack, rst}[r.IntN(6)]
			}
			seq = append(seq, pk{c, step{r.IntN(2) == 0, f, uint32(r.IntN(2) * 100)}})
		}
	}
	r.Shuffle(len(seq), func(i, j int) { seq[i], seq[j] = seq[j], seq[i] })
	for _, keep := range []bool{false, true} {
		ref, _ := New(Config{Backend: BackendExact, Capacity: 1000, KeepEnded: keep, ShadowRate: -1})
		var trs []*Tracker
		for _, k := range []BackendKind{BackendKBF, BackendSBF, BackendFCF, BackendDLeft} {
			tr, err := New(Config{Backend: k, Capacity: 1000, FPRate: 1e-6, KeepEnded: keep, ShadowRate: -1})
			if err != nil {
				t.Fatal(err)
			}
			trs = append(trs, tr)
		}
		for i, x := range seq {
			p := mkPacket(capture.ProtoTCP, x.c, srv, x.st, t0.Add(time.Duration(i)*time.Microsecond))
			want := ref.Observe(&p)
			for _, tr := range trs {
				if got := tr.Observe(&p); got != want {
					t.Fatalf("keep=%v packet %d (%s %s): %s gives %+v, exact %+v", keep, i, p.Key, x.st.f, tr.cfg.Backend, got, want)
				}
			}
		}
	}
}
