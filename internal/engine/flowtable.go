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

// flowTable is the replay's exact view of its open flows: first and last
// packet time and packets each way, for the flow records, the flow count
// and conn_states by flow. Like Zeek's connection table it holds the flows
// that are open: an ended flow leaves once its record is written, an open
// one when it has been idle past its timeout (its record then carries the
// state it had), and the table never holds more than maxFlows: at the cap
// the longest-idle flows are timed out early. So memory follows the
// configured capacity, not the trace's length or a flood.
type flowTable struct {
	m        map[capture.Key]*flowEntry
	distinct uint64            // flows started (records, as Zeek counts connections)
	states   map[string]uint64 // flows by final conn_state
	evicted  uint64            // open flows timed out by the table
	maxFlows int
	idleNew  time.Duration // timeout of a flow in S0, SH, SHR or unknown
	idleEst  time.Duration // timeout of the others
	sweepAt  time.Time     // next periodic sweep, in packet time
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
	uid         uint64    // seed of the flow's uid (uid.go)
	ended       bool
	written     bool
	state       acsm.ConnState
	origIsDst   bool
	conn        connFields // history, bytes, missed bytes (history.go)
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

// sweepEvery is how often (packet time) the table looks for idle flows.
const sweepEvery = 10 * time.Second

func newFlowTable(w io.Writer, maxFlows int, idleNew, idleEst time.Duration) *flowTable {
	t := &flowTable{m: map[capture.Key]*flowEntry{}, states: map[string]uint64{}, linger: recordLinger,
		maxFlows: max(maxFlows, 1), idleNew: idleNew, idleEst: idleEst}
	if w != nil {
		t.enc = json.NewEncoder(w) // one Write per record: see recordLog
	}
	return t
}

// packet records one packet and the ACSM's event for it.
func (t *flowTable) packet(p *capture.Packet, ev *acsm.Event) {
	now := p.Timestamp
	t.flushEnded(now)
	if !now.Before(t.sweepAt) {
		t.sweep(now, 1)
		t.sweepAt = now.Add(sweepEvery)
	}
	e := t.m[p.Key]
	if e == nil {
		// At the cap, time out idle flows early: half the timeouts, then a
		// quarter, ... until there is room again.
		for div := time.Duration(2); len(t.m) >= t.maxFlows && div <= 1<<20; div *= 2 {
			t.sweep(now, div)
		}
		e = t.start(p)
	} else if e.ended && ev.New {
		// The 5-tuple is reused after its flow ended: a new flow. The
		// old one's record goes out now; its queue entry is then skipped.
		t.writeOnce(p.Key, e)
		e = t.start(p)
	}
	// The orientation as the backend answered; when it could not tell,
	// the flow keeps the one it had (a new flow: its sender originates).
	first := e.pkts[0]+e.pkts[1] == 0
	origIsDst := e.origIsDst
	switch {
	case ev.Result != acsm.Unknown:
		origIsDst = ev.OrigIsDst
	case first:
		origIsDst = p.Reversed
	}
	e.conn.observe(p, origIsDst, first)
	e.last = p.Timestamp
	if p.Reversed {
		e.pkts[1]++
	} else {
		e.pkts[0]++
	}
	if e.ended {
		return // a straggler after the end (the last ACK)
	}
	// The state as the backend answered it at the flow's latest packet: an
	// open flow's record carries it, even if the flow has aged out since.
	e.state, e.origIsDst = ev.State, origIsDst
	if !ev.Ended {
		return
	}
	e.ended = true
	t.states[ev.State.String()]++
	t.ended = append(t.ended, endedFlow{key: p.Key, e: e, at: p.Timestamp})
}

// start enters a new flow at its first packet.
func (t *flowTable) start(p *capture.Packet) *flowEntry {
	e := &flowEntry{first: p.Timestamp, uid: uidSeed(p)}
	t.m[p.Key] = e
	t.distinct++
	return e
}

// sweep times out the open flows idle longer than their timeout divided
// by div, writing their records oldest first.
func (t *flowTable) sweep(now time.Time, div time.Duration) {
	var idle []capture.Key
	for k, e := range t.m {
		// As the ACSM's tiers: a handshake still open or one side only
		// times out fast, a flow both sides spoke in slowly.
		timeout := t.idleEst
		switch e.state {
		case acsm.S0, acsm.SH, acsm.SHR, acsm.ConnUnknown:
			timeout = t.idleNew
		}
		if !e.ended && now.Sub(e.last) >= timeout/div {
			idle = append(idle, k)
		}
	}
	t.sortOldestFirst(idle)
	for _, k := range idle {
		e := t.m[k]
		t.states[e.state.String()]++
		t.writeOnce(k, e)
		delete(t.m, k)
		t.evicted++
	}
}

func (t *flowTable) sortOldestFirst(keys []capture.Key) {
	slices.SortFunc(keys, func(a, b capture.Key) int {
		if c := t.m[a].first.Compare(t.m[b].first); c != 0 {
			return c
		}
		return a.Compare(b)
	})
}

// flushEnded writes the records of flows that ended more than linger
// before now.
func (t *flowTable) flushEnded(now time.Time) {
	for t.head < len(t.ended) && now.Sub(t.ended[t.head].at) >= t.linger {
		f := &t.ended[t.head]
		t.writeOnce(f.key, f.e)
		if t.m[f.key] == f.e {
			delete(t.m, f.key) // its stragglers are in; the flow is done
		}
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
// latest state.
func (t *flowTable) finish() error {
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
	t.sortOldestFirst(keys)
	for _, k := range keys {
		e := t.m[k]
		t.states[e.state.String()]++
		t.write(k, e, e.state, e.origIsDst)
	}
	return t.err
}

// FlowRecord is one line of the flow log: Zeek's conn.log field names for
// the fields Zeek has, in conn.log's order. Bytes, history and
// missed_bytes follow Zeek's rules (history.go); history is empty where
// Zeek's is unset ("-"), as for ICMP.
type FlowRecord struct {
	TS          float64    `json:"ts"`
	UID         string     `json:"uid"`
	OrigH       netip.Addr `json:"id.orig_h"`
	OrigP       uint16     `json:"id.orig_p"`
	RespH       netip.Addr `json:"id.resp_h"`
	RespP       uint16     `json:"id.resp_p"`
	Proto       string     `json:"proto"`
	Duration    float64    `json:"duration"`
	OrigBytes   uint64     `json:"orig_bytes"`
	RespBytes   uint64     `json:"resp_bytes"`
	ConnState   string     `json:"conn_state"`
	MissedBytes uint64     `json:"missed_bytes"`
	History     string     `json:"history"`
	OrigPkts    uint64     `json:"orig_pkts"`
	OrigIPBytes uint64     `json:"orig_ip_bytes"`
	RespPkts    uint64     `json:"resp_pkts"`
	RespIPBytes uint64     `json:"resp_ip_bytes"`
}

// connProto is conn.log's proto: Zeek's transport_proto, which has icmp
// for ICMPv6 too and unknown_transport for what is not TCP, UDP or ICMP.
func connProto(p uint8) string {
	switch p {
	case capture.ProtoTCP, capture.ProtoUDP, capture.ProtoICMP:
		return capture.ProtoName(p)
	case capture.ProtoICMPv6:
		return "icmp"
	}
	return "unknown_transport"
}

func (t *flowTable) write(k capture.Key, e *flowEntry, st acsm.ConnState, origIsDst bool) {
	if t.enc == nil || t.err != nil {
		return
	}
	c := &e.conn
	o, rs := &c.side[0], &c.side[1]
	r := FlowRecord{
		TS:       float64(e.first.UnixNano()) / 1e9,
		UID:      formatUID(e.uid),
		Duration: e.last.Sub(e.first).Seconds(),
		OrigH:    k.Src, OrigP: k.SrcPort, RespH: k.Dst, RespP: k.DstPort,
		Proto:       connProto(k.Proto),
		ConnState:   st.String(),
		MissedBytes: uint64(o.missed) + uint64(rs.missed),
		History:     c.history(),
		OrigPkts:    e.pkts[0], RespPkts: e.pkts[1],
	}
	if origIsDst {
		r.OrigH, r.OrigP, r.RespH, r.RespP = k.Dst, k.DstPort, k.Src, k.SrcPort
		r.OrigPkts, r.RespPkts = e.pkts[1], e.pkts[0]
		o, rs = rs, o
	}
	r.OrigBytes, r.RespBytes = o.bytes(k.Proto), rs.bytes(k.Proto)
	r.OrigIPBytes, r.RespIPBytes = o.ipBytes, rs.ipBytes
	t.err = t.enc.Encode(&r)
}
