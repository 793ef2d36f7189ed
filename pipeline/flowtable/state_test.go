package flowtable

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
)

// churnTable is a table of cap flows, with and without records, after n
// packets of TestFlowTableChurn's kind of traffic.
func churnTable(records bool, capFlows, n int, seed uint64) *Table {
	var sink *recordSink
	if records {
		sink = &recordSink{}
	}
	var tab *Table
	if sink != nil {
		tab = newFlowTable(sink.out(), nil, capFlows, 3*time.Second, 20*time.Second)
	} else {
		tab = newFlowTable(nil, nil, capFlows, 3*time.Second, 20*time.Second)
	}
	churn(tab, n, seed, time.Unix(1700000000, 0))
	return tab
}

// churnKeys are churn's flows, made once: a fuzz target churns after
// every restore.
var churnKeys = sync.OnceValue(func() []capture.Packet { return benchPackets(150, 5) })

// churn sends n packets of random flows, states, starts and ends
// through tab from start on.
func churn(tab *Table, n int, seed uint64, start time.Time) time.Time {
	r := rand.New(rand.NewPCG(seed, seed))
	keys := churnKeys()
	now := start
	for i := range n {
		p := keys[r.IntN(len(keys))]
		now = now.Add(time.Duration(r.IntN(5_000_000)))
		p.Timestamp, p.Seq = now, uint32(i)
		ev := acsm.Event{Result: acsm.Found, State: acsm.S1, New: r.IntN(4) == 0, Ended: r.IntN(8) == 0}
		if ev.Ended {
			ev.State = acsm.SF
		}
		tab.Packet(&p, &ev)
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
		state := ta.AppendState(nil)
		tb := newFlowTable(b.out(), nil, 40, 3*time.Second, 20*time.Second)
		if !records {
			ta.recs, tb.recs = nil, nil
			state = ta.AppendState(nil)
		}
		open, err := tb.RestoreState(state)
		if err != nil {
			t.Fatal(err)
		}
		if open != ta.OpenFlows() || tb.count != ta.count {
			t.Fatalf("restored %d open flows of %d held; original %d open of %d", open, tb.count, ta.OpenFlows(), ta.count)
		}
		checkTable(t, tb)
		a.sync()
		a.n, a.keep = 0, nil
		evictedBefore := ta.evicted // the restored table counts its own run's
		churn(ta, 5000, 2, now)
		churn(tb, 5000, 2, now)
		ta.Finish()
		tb.Finish()
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
	state := churnTable(true, 40, 3000, 3).AppendState(nil)
	other := newFlowTable((&recordSink{}).out(), nil, 50, 3*time.Second, 20*time.Second)
	if _, err := other.RestoreState(state); err == nil {
		t.Error("a state of 40 flows restored into a table of 50")
	}
	for _, cut := range []int{0, 7, 100, len(state) - 1} {
		tab := newFlowTable((&recordSink{}).out(), nil, 40, 3*time.Second, 20*time.Second)
		if _, err := tab.RestoreState(state[:cut]); err == nil {
			t.Errorf("a state cut to %d of %d bytes restored", cut, len(state))
		}
	}
	bad := append([]byte(nil), state...)
	// The first meta's slot index (after 14 words of header): far out.
	for i := 14 * 8; i < 14*8+slotCount(40)*24; i += 24 {
		bad[i+16], bad[i+17] = 0xff, 0xff
	}
	tab := newFlowTable((&recordSink{}).out(), nil, 40, 3*time.Second, 20*time.Second)
	if _, err := tab.RestoreState(bad); err == nil {
		t.Error("a state with slot indexes out of the table restored")
	}
	if tab.count != 0 || tab.fresh != 0 {
		t.Errorf("a refused state left %d flows", tab.count)
	}
	churn(tab, 1000, 4, time.Unix(1700000000, 0))
	checkTable(t, tab)
}

// fuzzFlows is FuzzFlowTableRestore's table size: a few flows give
// states of a few hundred bytes (1.4 KB with records), which the fuzzer
// mutates and minimizes quickly, yet hold flows held, free, ended and
// wrapping round the metas.
const fuzzFlows = 4

// recsWord is the offset of a flow table state's records flag.
const recsWord = 13 * 8

// FuzzFlowTableRestore: no state, however damaged, makes a restore or
// the packets after it panic; a restored table keeps its invariants and
// encodes back to the state it was restored from (when the state's flow
// log matches the table's: a state without records restored into a table
// with them starts each flow's record at the restore). The seeds are full
// tables and tables of mostly free slots, with and without records.
func FuzzFlowTableRestore(f *testing.F) {
	idle := time.Unix(1700000000, 0).Add(30 * time.Second)
	for _, records := range []bool{true, false} {
		full := churnTable(records, fuzzFlows, 3000, 5)
		f.Add(records, full.AppendState(nil))
		churn(full, 1, 9, idle) // times out all but one
		f.Add(records, full.AppendState(nil))
	}
	var sink recordSink
	f.Fuzz(func(t *testing.T, records bool, state []byte) {
		var o Out
		if records {
			o = sink.out()
		}
		tab := newFlowTable(o, nil, fuzzFlows, 3*time.Second, 20*time.Second)
		if _, err := tab.RestoreState(state); err != nil {
			return
		}
		checkTable(t, tab)
		if (binary.LittleEndian.Uint64(state[recsWord:]) == 1) == records {
			if again := tab.AppendState(nil); !bytes.Equal(again, state) {
				t.Fatal("a restored table does not encode back to its state")
			}
		}
		churn(tab, 300, 7, time.Unix(1700000000, 0))
		checkTable(t, tab)
		tab.Finish()
		sink.sync()
		sink.n, sink.keep = 0, sink.keep[:0]
	})
}
