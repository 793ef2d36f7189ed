package pipeline

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm"
)

// churnTable is a table of cap flows, with and without records, after n
// packets of TestFlowTableChurn's kind of traffic.
func churnTable(records bool, capFlows, n int, seed uint64) *flowTable {
	var sink *recordSink
	if records {
		sink = &recordSink{}
	}
	var tab *flowTable
	if sink != nil {
		tab = newFlowTable(sink.out(), nil, capFlows, 3*time.Second, 20*time.Second)
	} else {
		tab = newFlowTable(nil, nil, capFlows, 3*time.Second, 20*time.Second)
	}
	churn(tab, n, seed, time.Unix(1700000000, 0))
	return tab
}

// churn sends n packets of random flows, states, starts and ends
// through tab from start on.
func churn(tab *flowTable, n int, seed uint64, start time.Time) time.Time {
	r := rand.New(rand.NewPCG(seed, seed))
	keys := benchPackets(150, 5)
	now := start
	for i := range n {
		p := keys[r.IntN(len(keys))]
		now = now.Add(time.Duration(r.IntN(5_000_000)))
		p.Timestamp, p.Seq = now, uint32(i)
		ev := acsm.Event{Result: acsm.Found, State: acsm.S1, New: r.IntN(4) == 0, Ended: r.IntN(8) == 0}
		if ev.Ended {
			ev.State = acsm.SF
		}
		tab.packet(&p, &ev)
	}
	return now
}

// TestFlowTableStateRoundTrip: a table restored from another's state
// holds the same flows and goes on exactly as the original: the same
// records and time-outs after the same packets, with a flow log and
// without.
func TestFlowTableStateRoundTrip(t *testing.T) {
	for _, records := range []bool{false, true} {
		var a, b recordSink
		ta := newFlowTable(a.out(), nil, 40, 3*time.Second, 20*time.Second)
		now := churn(ta, 5000, 1, time.Unix(1700000000, 0))
		state := ta.appendState(nil)
		tb := newFlowTable(b.out(), nil, 40, 3*time.Second, 20*time.Second)
		if !records {
			ta.recs, tb.recs = nil, nil
			state = ta.appendState(nil)
		}
		open, err := tb.restoreState(state)
		if err != nil {
			t.Fatal(err)
		}
		if open != ta.openFlows() || tb.count != ta.count {
			t.Fatalf("restored %d open flows of %d held; original %d open of %d", open, tb.count, ta.openFlows(), ta.count)
		}
		checkTable(t, tb)
		a.sync()
		a.n, a.keep = 0, nil
		evictedBefore := ta.evicted // the restored table counts its own run's
		churn(ta, 5000, 2, now)
		churn(tb, 5000, 2, now)
		ta.finish()
		tb.finish()
		a.sync()
		b.sync()
		if a.n != b.n || len(a.keep) != len(b.keep) || ta.evicted-evictedBefore != tb.evicted {
			t.Errorf("records: %d after the state, %d from the restored table; timed out %d, %d", a.n, b.n, ta.evicted-evictedBefore, tb.evicted)
		}
		for i := range min(len(a.keep), len(b.keep)) {
			if !reflect.DeepEqual(a.keep[i], b.keep[i]) {
				t.Errorf("record %d: %+v, restored %+v", i, a.keep[i], b.keep[i])
				break
			}
		}
	}
}

// TestFlowTableStateRefused: a state for another cap, a truncated one and
// one whose indexes point outside the table are refused, and the table
// stays empty and usable.
func TestFlowTableStateRefused(t *testing.T) {
	state := churnTable(true, 40, 3000, 3).appendState(nil)
	other := newFlowTable((&recordSink{}).out(), nil, 50, 3*time.Second, 20*time.Second)
	if _, err := other.restoreState(state); err == nil {
		t.Error("a state of 40 flows restored into a table of 50")
	}
	for _, cut := range []int{0, 7, 100, len(state) - 1} {
		tab := newFlowTable((&recordSink{}).out(), nil, 40, 3*time.Second, 20*time.Second)
		if _, err := tab.restoreState(state[:cut]); err == nil {
			t.Errorf("a state cut to %d of %d bytes restored", cut, len(state))
		}
	}
	bad := append([]byte(nil), state...)
	// The first meta's slot index (after 14 words of header): far out.
	for i := 14 * 8; i < 14*8+int(slotCount(40))*24; i += 24 {
		bad[i+16], bad[i+17] = 0xff, 0xff
	}
	tab := newFlowTable((&recordSink{}).out(), nil, 40, 3*time.Second, 20*time.Second)
	if _, err := tab.restoreState(bad); err == nil {
		t.Error("a state with slot indexes out of the table restored")
	}
	if tab.count != 0 || tab.fresh != 0 {
		t.Errorf("a refused state left %d flows", tab.count)
	}
	churn(tab, 1000, 4, time.Unix(1700000000, 0))
	checkTable(t, tab)
}

// FuzzFlowTableRestore: no state, however damaged, makes a restore or
// the packets after it panic; a restored table keeps its invariants.
func FuzzFlowTableRestore(f *testing.F) {
	f.Add(churnTable(true, 40, 3000, 5).appendState(nil))
	f.Add(churnTable(false, 40, 500, 6).appendState(nil))
	f.Fuzz(func(t *testing.T, state []byte) {
		tab := newFlowTable((&recordSink{}).out(), nil, 40, 3*time.Second, 20*time.Second)
		if _, err := tab.restoreState(state); err != nil {
			return
		}
		churn(tab, 300, 7, time.Unix(1700000000, 0))
		tab.finish()
	})
}
