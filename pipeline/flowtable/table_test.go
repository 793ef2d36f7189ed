package flowtable

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/pipeline/flowcount"
	"github.com/flowmon/flowmon/record"
	"github.com/flowmon/flowmon/record/connlog"
)

// recordSink counts the records written and keeps those of flows from
// 172.16.0.0/16, as conn.log lines read back.
type recordSink struct {
	n       int
	keep    []connlog.Record
	pending []record.Flow
}

// out is what a flow table writes to s through.
func (s *recordSink) out() Out { return s }

func (s *recordSink) Next() *record.Flow {
	s.pending = append(s.pending, record.Flow{})
	return &s.pending[len(s.pending)-1]
}

// sync takes in the records the table wrote so far.
func (s *recordSink) sync() {
	for i := range s.pending {
		s.n++
		b := connlog.AppendJSON(nil, &s.pending[i])
		if bytes.Contains(b, []byte(`"172.16.`)) {
			var r connlog.Record
			if err := json.Unmarshal(b, &r); err != nil {
				panic(err)
			}
			s.keep = append(s.keep, r)
		}
	}
	s.pending = s.pending[:0]
}

// newFlowTable is New with the settings the tests vary.
func newFlowTable(out Out, counter *flowcount.Counter, maxFlows int, idleNew, idleEst time.Duration) *Table {
	return New(Config{Out: out, Counter: counter, MaxFlows: maxFlows, IdleNew: idleNew, IdleEstablished: idleEst})
}

// checkTable verifies the table's invariants: every flow is found from
// its home, the count is the flows held, and it is within the cap.
func checkTable(t *testing.T, tab *Table) {
	t.Helper()
	held := 0
	for i, m := range tab.meta {
		if m.hash == 0 {
			continue
		}
		held++
		if j, ok := tab.lookup(m.hash, &tab.slots[m.idx].key); !ok || j != i {
			t.Fatalf("slot %d: lookup finds %d, %v", i, j, ok)
		}
	}
	if held != tab.count || held > tab.maxFlows {
		t.Fatalf("%d flows held, count %d, cap %d", held, tab.count, tab.maxFlows)
	}
}

// TestFlowTableChurn runs flows that start, end, are reused and time out
// through a small table (its runs wrap round its end) and checks its
// invariants after every packet and one record per flow at the end.
func TestFlowTableChurn(t *testing.T) {
	var sink recordSink
	tab := newFlowTable(sink.out(), nil, 40, 3*time.Second, 20*time.Second)
	r := rand.New(rand.NewPCG(7, 7))
	keys := benchPackets(150, 5)
	now := time.Unix(1700000000, 0)
	for i := range 20000 {
		p := keys[r.IntN(len(keys))]
		now = now.Add(time.Duration(r.IntN(5_000_000)))
		p.Timestamp, p.Seq = now, uint32(i)
		ev := acsm.Event{Result: acsm.Found, State: acsm.S1, New: r.IntN(4) == 0, Ended: r.IntN(8) == 0}
		if r.IntN(3) == 0 {
			ev.State = acsm.S0
		}
		if ev.Ended {
			ev.State = acsm.SF
		}
		tab.Packet(&p, &ev)
		checkTable(t, tab)
	}
	var states uint64
	distinct := tab.distinct
	tab.Finish()
	for _, n := range tab.states {
		states += n
	}
	sink.sync()
	if uint64(sink.n) != distinct || states != distinct {
		t.Errorf("%d records, %d by state, %d flows", sink.n, states, distinct)
	}
	t.Logf("%d flows, %d timed out", distinct, tab.evicted)
}

// TestFlowTableFloodKeepsLongFlows floods a table of 1,000 flows with
// 300,000 SYNs of random sources while 20 established flows send a packet
// a second: the heap stays flat (after a warm-up), the table at its cap,
// and the established flows are never timed out by the flood: each has
// one record with all its packets. The SYNs that came while the table was
// full were shed (no slot, no record) and are counted as flows.
func TestFlowTableFloodKeepsLongFlows(t *testing.T) {
	var sink recordSink
	const capFlows, long, flood = 1000, 20, 300_000
	tab := newFlowTable(sink.out(), nil, capFlows, time.Minute, time.Hour)
	syns := benchPackets(flood, 11)
	dst := netip.MustParseAddr("192.0.2.80")
	longs := make([]capture.Packet, long)
	for i := range longs {
		k := capture.Key{Src: netip.AddrFrom4([4]byte{172, 16, 0, byte(i)}), Dst: dst, SrcPort: 40000, DstPort: 443,
			Proto: capture.ProtoTCP}
		longs[i] = capture.Packet{HasTCP: true, Flags: capture.ACK, Seq: 1000, IPLen: 40}
		longs[i].Key, longs[i].Reversed = k.Canonical()
		longs[i].Hash = k.Hash()
	}
	t0 := time.Unix(1700000000, 0)
	synEv := acsm.Event{New: true, Result: acsm.Found, State: acsm.S0}
	estEv := acsm.Event{Result: acsm.Found, State: acsm.S1}
	sent := 0
	run := func(from, to int) {
		for i := from; i < to; i++ {
			now := t0.Add(time.Duration(i) * 100 * time.Microsecond) // 10,000 SYNs a second
			if i%(10_000/long) == 0 {
				p := &longs[i/(10_000/long)%long]
				p.Timestamp = now
				ev := estEv
				ev.New = sent < long
				tab.Packet(p, &ev)
				sent++
			}
			p := &syns[i]
			p.Flags, p.Timestamp = capture.SYN, now
			tab.Packet(p, &synEv)
		}
	}
	const warm = 20_000
	run(0, warm)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	run(warm, flood)
	runtime.GC()
	runtime.ReadMemStats(&after)
	checkTable(t, tab)
	if tab.count != capFlows {
		t.Errorf("table holds %d flows, want its cap %d", tab.count, capFlows)
	}
	if grow := int64(after.HeapAlloc) - int64(before.HeapAlloc); grow > 64<<10 {
		t.Errorf("heap grew by %d bytes over %d more flood flows", grow, flood-warm)
	}
	tab.Finish()
	sink.sync()
	if uint64(sink.n)+tab.shedSYNs != flood+long || tab.shedSYNs == 0 || tab.distinct != flood+long {
		t.Errorf("%d records and %d SYNs shed, %d flows; want %d flows, some shed", sink.n, tab.shedSYNs, tab.distinct, flood+long)
	}
	pkts := map[netip.Addr]uint64{}
	for _, r := range sink.keep {
		pkts[r.OrigH] += r.OrigPkts + r.RespPkts
		if r.ConnState != "S1" {
			t.Errorf("%v: conn_state %s, want S1", r.OrigH, r.ConnState)
		}
	}
	if len(sink.keep) != long || len(pkts) != long {
		t.Errorf("%d records of %d established flows, want one each", len(sink.keep), len(pkts))
	}
	for a, n := range pkts {
		if n != uint64(sent/long) {
			t.Errorf("%v: %d packets in its record, sent %d", a, n, sent/long)
		}
	}
}

// TestFlowTableShedsSYNsAtCap: a table at its cap enters no flow at its
// SYN; the SYN counts in the flow counter and as a flow in S0. At the
// flow's next packet, which the ACSM knows (not new), the flow is entered,
// another timed out for it, and its record carries the ACSM's state.
func TestFlowTableShedsSYNsAtCap(t *testing.T) {
	var sink recordSink
	counter, err := flowcount.New(flowcount.Options{ExpectedFlows: 1 << 18, FPRate: 1e-4})
	if err != nil {
		t.Fatal(err)
	}
	const capFlows = 4
	tab := newFlowTable(sink.out(), counter, capFlows, time.Minute, time.Hour)
	t0 := time.Unix(1700000000, 0)
	counter.Rotate(t0)
	pkts := benchPackets(capFlows+1, 3)
	est := acsm.Event{New: true, Result: acsm.Found, State: acsm.S1}
	for i := range capFlows {
		pkts[i].Timestamp = t0
		tab.Packet(&pkts[i], &est)
	}
	syn := &pkts[capFlows]
	syn.Flags, syn.Timestamp = capture.SYN, t0.Add(time.Millisecond)
	tab.Packet(syn, &acsm.Event{New: true, Result: acsm.Found, State: acsm.S0, OrigIsDst: syn.Reversed})
	k := packKey(&syn.Key)
	if _, found := tab.lookup(slotTag(syn.Hash), &k); found || tab.count != capFlows || tab.shedSYNs != 1 || tab.atCap != 0 {
		t.Fatalf("SYN at the cap: entered %v, %d flows held, %d shed, %d timed out at the cap; want shed", found, tab.count, tab.shedSYNs, tab.atCap)
	}
	if n := counter.Count(syn.Hash); n != 1 {
		t.Errorf("the flow counter holds %d packets of the shed SYN's flow, want 1", n)
	}
	synAck := *syn
	synAck.Reversed, synAck.Flags, synAck.Timestamp = !syn.Reversed, capture.SYN|capture.ACK, t0.Add(2*time.Millisecond)
	tab.Packet(&synAck, &acsm.Event{Result: acsm.Found, Prev: acsm.S0, State: acsm.S1, OrigIsDst: syn.Reversed})
	if _, found := tab.lookup(slotTag(syn.Hash), &k); !found || tab.count != capFlows || tab.atCap != 1 {
		t.Fatalf("SYN-ACK at the cap: entered %v, %d flows held, %d timed out at the cap; want entered, one timed out", found, tab.count, tab.atCap)
	}
	checkTable(t, tab)
	tab.Finish()
	// Records: the four first flows (one timed out for the SYN-ACK's) and
	// the handshake's from its SYN-ACK; flows: those and the shed SYN.
	sink.sync()
	if sink.n != capFlows+1 || tab.distinct != capFlows+2 || tab.states["S0"] != 1 || tab.states["S1"] != capFlows+1 {
		t.Errorf("%d records, %d flows, states %v; want %d records, %d flows, S0 1 (the shed SYN), S1 %d",
			sink.n, tab.distinct, tab.states, capFlows+1, capFlows+2, capFlows+1)
	}
}

// The flow table allocates nothing per packet: for flows it holds and
// for new flows at its cap (each times another out).
func TestFlowTableNoAllocs(t *testing.T) {
	const open = 10_000
	tab := newFlowTable(nil, nil, open, time.Minute, time.Hour)
	pkts := benchPackets(open, 1)
	now := time.Unix(1700000000, 0)
	newEv, est := acsm.Event{New: true, State: acsm.S0}, acsm.Event{Result: acsm.Found, State: acsm.S1}
	for i := range pkts {
		now = now.Add(time.Microsecond)
		pkts[i].Timestamp = now
		tab.Packet(&pkts[i], &newEv)
	}
	i := 0
	if n := testing.AllocsPerRun(5000, func() {
		p := &pkts[i%open]
		now = now.Add(time.Microsecond)
		p.Timestamp = now
		tab.Packet(p, &est)
		i++
	}); n != 0 {
		t.Errorf("held flows: %.2f allocations per packet", n)
	}
	fresh := benchPackets(20_000, 2)
	i = 0
	if n := testing.AllocsPerRun(5000, func() {
		p := &fresh[i]
		now = now.Add(time.Microsecond)
		p.Timestamp = now
		tab.Packet(p, &newEv)
		i++
	}); n != 0 {
		t.Errorf("new flows: %.2f allocations per packet", n)
	}
	if tab.count != open {
		t.Errorf("table holds %d flows, want its cap %d", tab.count, open)
	}
}

// TestFlowSlotLayout: a flow's slot is one whole line and its record
// three, so that neither shares a line with another flow's.
func TestFlowSlotLayout(t *testing.T) {
	if n := unsafe.Sizeof(flowSlot{}); n != 64 {
		t.Errorf("flowSlot is %d bytes, want 64", n)
	}
	if n := unsafe.Sizeof(recordFields{}); n != 192 {
		t.Errorf("recordFields is %d bytes, want 192", n)
	}
}

// TestFlowTableClock: a packet whose time goes back is at the table's
// clock (the latest packet time) for the deadlines and at its own time
// in the record: a flow idle 9 s, then a packet 59 s in the past, then
// one 6 s later than the latest stays one flow under a 10 s timeout, and
// times out 10 s after its latest packet on the clock.
func TestFlowTableClock(t *testing.T) {
	var sink recordSink
	tab := newFlowTable(sink.out(), nil, 100, 10*time.Second, 10*time.Second)
	p := benchPackets(1, 3)[0]
	p.Key.Src = netip.MustParseAddr("172.16.0.1")
	p.Key, p.Reversed = p.Key.Canonical()
	p.Hash = p.Key.Hash()
	t0 := time.Unix(1700000000, 0)
	for _, at := range []time.Duration{0, 9 * time.Second, -50 * time.Second, 15 * time.Second, 26 * time.Second} {
		p.Timestamp = t0.Add(at)
		ev := acsm.Event{Result: acsm.Found, State: acsm.S1}
		tab.Packet(&p, &ev)
	}
	tab.Finish()
	sink.sync()
	if len(sink.keep) != 2 {
		t.Fatalf("%d records, want 2: %+v", len(sink.keep), sink.keep)
	}
	a, b := sink.keep[0], sink.keep[1]
	if a.OrigPkts+a.RespPkts != 4 || b.OrigPkts+b.RespPkts != 1 {
		t.Errorf("packets %d and %d, want 4 and 1", a.OrigPkts+a.RespPkts, b.OrigPkts+b.RespPkts)
	}
	if d := a.Duration; d < 14.999 || d > 15.001 {
		t.Errorf("first flow's duration %v, want 15 s (its first packet's time to its last's)", d)
	}
}
