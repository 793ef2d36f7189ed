package engine

import (
	"encoding/json"
	"io"
	"net/netip"
	"slices"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
)

// flowTable is the replay's exact view of its flows: first and last packet
// time and packets each way, for the flow records and the exact flow count.
// It grows with the number of flows in the trace, which is fine for a
// replay of a file and is why the live agent does not keep one.
type flowTable struct {
	m        map[capture.Key]*flowEntry
	distinct uint64
	// ended flows wait linger (packet time) for their stragglers before
	// their record is written, oldest first.
	ended  []endedFlow
	head   int // ended[:head] are written
	linger time.Duration
	enc    *json.Encoder
	err    error
}

type flowEntry struct {
	first, last time.Time
	pkts        [2]uint64 // packets from Key.Src, from Key.Dst
	ended       bool
	written     bool
	state       acsm.ConnState
	origIsDst   bool
}

type endedFlow struct {
	key capture.Key
	e   *flowEntry
	at  time.Time
}

// recordLinger is how long after its end a flow's record waits for the
// flow's last packets (the ACK of the last FIN). Zeek waits longer (its
// tcp_close_delay is 5 s) because it also reassembles; counting needs less.
const recordLinger = 2 * time.Second

func newFlowTable(w io.Writer) *flowTable {
	t := &flowTable{m: map[capture.Key]*flowEntry{}, linger: recordLinger}
	if w != nil {
		t.enc = json.NewEncoder(w) // one Write per record: see syncWriter
	}
	return t
}

// packet records one packet and the ACSM's event for it; it returns the
// flow's final conn_state when the packet ended the flow.
func (t *flowTable) packet(p *capture.Packet, ev *acsm.Event) string {
	t.flushEnded(p.Timestamp)
	e := t.m[p.Key]
	if e == nil {
		e = &flowEntry{first: p.Timestamp}
		t.m[p.Key] = e
		t.distinct++
	} else if e.ended && ev.New {
		// The 5-tuple is reused after its flow ended: a new flow. The
		// old one's record goes out now; its queue entry is then skipped.
		t.writeOnce(p.Key, e)
		e = &flowEntry{first: p.Timestamp}
		t.m[p.Key] = e
	}
	e.last = p.Timestamp
	if p.Reversed {
		e.pkts[1]++
	} else {
		e.pkts[0]++
	}
	if e.ended {
		return "" // a straggler after the end (the last ACK)
	}
	// The state as the backend answered it at the flow's latest packet: an
	// open flow's record carries it, even if the flow has aged out since.
	e.state, e.origIsDst = ev.State, ev.OrigIsDst
	if !ev.Ended {
		return ""
	}
	e.ended = true
	t.ended = append(t.ended, endedFlow{key: p.Key, e: e, at: p.Timestamp})
	return ev.State.String()
}

// flushEnded writes the records of flows that ended more than linger
// before now.
func (t *flowTable) flushEnded(now time.Time) {
	for t.head < len(t.ended) && now.Sub(t.ended[t.head].at) >= t.linger {
		f := &t.ended[t.head]
		t.writeOnce(f.key, f.e)
		*f = endedFlow{}
		t.head++
	}
	// Compact once the written prefix is most of the queue, so each entry
	// is moved O(1) times.
	if t.head > 1024 && t.head*2 > len(t.ended) {
		t.ended = t.ended[:copy(t.ended, t.ended[t.head:])]
		t.head = 0
	}
}

func (t *flowTable) writeOnce(k capture.Key, e *flowEntry) {
	if !e.written {
		e.written = true
		t.write(k, e, e.state, e.origIsDst)
	}
}

// finish writes a record for every flow still open, oldest first, with its
// latest state, and calls count with each state.
func (t *flowTable) finish(count func(string)) error {
	for _, f := range t.ended[t.head:] {
		t.writeOnce(f.key, f.e)
	}
	t.ended, t.head = nil, 0
	keys := make([]capture.Key, 0, len(t.m))
	for k, e := range t.m {
		if !e.ended {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b capture.Key) int {
		if c := t.m[a].first.Compare(t.m[b].first); c != 0 {
			return c
		}
		return a.Compare(b)
	})
	for _, k := range keys {
		e := t.m[k]
		count(e.state.String())
		t.write(k, e, e.state, e.origIsDst)
	}
	return t.err
}

// FlowRecord is one line of the flow log: Zeek's conn.log field names for
// the fields Zeek has.
type FlowRecord struct {
	TS        float64    `json:"ts"`
	Duration  float64    `json:"duration"`
	OrigH     netip.Addr `json:"id.orig_h"`
	OrigP     uint16     `json:"id.orig_p"`
	RespH     netip.Addr `json:"id.resp_h"`
	RespP     uint16     `json:"id.resp_p"`
	Proto     string     `json:"proto"`
	ConnState string     `json:"conn_state"`
	OrigPkts  uint64     `json:"orig_pkts"`
	RespPkts  uint64     `json:"resp_pkts"`
}

func (t *flowTable) write(k capture.Key, e *flowEntry, st acsm.ConnState, origIsDst bool) {
	if t.enc == nil || t.err != nil {
		return
	}
	r := FlowRecord{
		TS:       float64(e.first.UnixNano()) / 1e9,
		Duration: e.last.Sub(e.first).Seconds(),
		OrigH:    k.Src, OrigP: k.SrcPort, RespH: k.Dst, RespP: k.DstPort,
		Proto:     capture.ProtoName(k.Proto),
		ConnState: st.String(),
		OrigPkts:  e.pkts[0], RespPkts: e.pkts[1],
	}
	if origIsDst {
		r.OrigH, r.OrigP, r.RespH, r.RespP = k.Dst, k.DstPort, k.Src, k.SrcPort
		r.OrigPkts, r.RespPkts = e.pkts[1], e.pkts[0]
	}
	t.err = t.enc.Encode(&r)
}
