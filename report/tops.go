package report

import (
	"cmp"
	"net/netip"
	"slices"
	"strconv"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/record"
	"github.com/flowmon/flowmon/record/connlog"
)

// ReportTop is how many rows each of the report's tables shows.
const ReportTop = 10

// TopCapacity is how many addresses each talker table holds
// (Space-Saving by bytes, heavy): exact below it, and past it every
// address with more than 1/TopCapacity of the bytes is in the table, its
// bytes over by at most its Err; the table by packets ranks the same
// addresses. Ports are counted exactly, in an array of every port.
const TopCapacity = 1 << 12

// Conn is a flow as the tops read it: from a record (AddRecord) or a
// line of a flow log (AddLine), the same figures either way. Packets and
// Bytes are both sides' (conn.log's orig_pkts + resp_pkts and
// orig_ip_bytes + resp_ip_bytes: IP bytes, as nfdump counts).
type Conn struct {
	UID      string     `json:"uid"`
	Proto    string     `json:"proto"` // conn.log's: tcp, udp, icmp, unknown_transport
	Orig     netip.Addr `json:"orig_h"`
	OrigPort uint16     `json:"orig_p"`
	Resp     netip.Addr `json:"resp_h"`
	RespPort uint16     `json:"resp_p"`
	State    string     `json:"conn_state"`
	Duration float64    `json:"duration"`
	Packets  uint64     `json:"packets"`
	Bytes    uint64     `json:"bytes"`

	// A record's uid seed and state, spelled only when the flow is one
	// of the top (named).
	uidSeed  uint64
	state    acsm.ConnState
	fromFlow bool
}

// named spells the fields only a top flow shows.
func (c *Conn) named() {
	if c.fromFlow {
		c.UID, c.State, c.fromFlow = record.UIDString(c.uidSeed), c.state.String(), false
	}
}

// addrKey is an address as a map key: plain bytes hash faster than a
// netip.Addr, whose zone is a pointer.
type addrKey struct {
	a  [16]byte
	v4 bool
}

func keyOf(a netip.Addr) addrKey { return addrKey{a.As16(), a.Is4()} }

func (k addrKey) String() string {
	a := netip.AddrFrom16(k.a)
	if k.v4 {
		a = a.Unmap()
	}
	return a.String()
}

// Port is a responder's port under its protocol (ICMP's: the type).
type Port struct {
	Proto string
	Port  uint16
}

func (p Port) String() string { return p.Proto + "/" + strconv.Itoa(int(p.Port)) }

// Tops are the heaviest flows, originators, responders and responder
// ports of a replay's flow records, by bytes and by packets, as nfdump
// -s ranks them. Interim records (an active timeout's) are left out:
// their flow's last record counts it whole. Not safe for concurrent use.
type Tops struct {
	n     int
	flows [2]topFlows
	src   *heavy[addrKey]
	dst   *heavy[addrKey]
	// ports are every port's figures by portIndex, in blocks of 256
	// made when a port of theirs is first counted: a scan of every port
	// takes 8 MB, a usual trace's few dozen ports a few blocks.
	ports   [len(protoNames) << 8]*[256]Row
	total   Row // Flows, Packets, Bytes of every flow
	interim uint64
}

// NewTops returns empty tops keeping n rows a table.
func NewTops(n int) *Tops {
	t := &Tops{n: n, src: newHeavy[addrKey](byBytes, TopCapacity), dst: newHeavy[addrKey](byBytes, TopCapacity)}
	for _, f := range []figure{byBytes, byPackets} {
		t.flows[f] = topFlows{by: f, n: n}
	}
	return t
}

// AddRecord counts a flow record.
func (t *Tops) AddRecord(f *record.Flow) {
	if f.EndReason == record.EndActive {
		t.interim++
		return
	}
	c := Conn{Proto: connlog.Proto(f.Proto), Orig: f.Orig, OrigPort: f.OrigPort, Resp: f.Resp, RespPort: f.RespPort,
		Packets: f.OrigPkts + f.RespPkts, Bytes: f.OrigIPBytes + f.RespIPBytes, Duration: f.Duration(),
		uidSeed: f.UID, state: f.State, fromFlow: true}
	t.add(&c)
}

// AddLine counts a line of a flow log.
func (t *Tops) AddLine(r *connlog.Record) {
	if r.Interim {
		t.interim++
		return
	}
	c := Conn{UID: r.UID, Proto: r.Proto, Orig: r.OrigH, OrigPort: r.OrigP, Resp: r.RespH, RespPort: r.RespP,
		State: r.ConnState, Duration: r.Duration, Packets: r.OrigPkts + r.RespPkts, Bytes: r.OrigIPBytes + r.RespIPBytes}
	t.add(&c)
}

// add counts c.
func (t *Tops) add(c *Conn) {
	t.total.Flows++
	t.total.Packets += c.Packets
	t.total.Bytes += c.Bytes
	for f := range t.flows {
		t.flows[f].add(c)
	}
	t.src.add(keyOf(c.Orig), c.Packets, c.Bytes)
	t.dst.add(keyOf(c.Resp), c.Packets, c.Bytes)
	i := portIndex(c.Proto, c.RespPort)
	blk := t.ports[i>>8]
	if blk == nil {
		blk = new([256]Row)
		t.ports[i>>8] = blk
	}
	p := &blk[i&0xff]
	p.Flows++
	p.Packets += c.Packets
	p.Bytes += c.Bytes
}

// protoNames are conn.log's protos, whose ports the tops count.
var protoNames = [...]string{"unknown_transport", "tcp", "udp", "icmp"}

func portIndex(proto string, port uint16) int {
	for i, n := range protoNames {
		if n == proto {
			return i<<16 | int(port)
		}
	}
	return int(port)
}

// topFlows keeps the n heaviest flows (a min-heap: the lightest first).
type topFlows struct {
	by   figure
	n    int
	heap []Conn
}

func (t *topFlows) weight(c *Conn) uint64 {
	if t.by == byPackets {
		return c.Packets
	}
	return c.Bytes
}

func (t *topFlows) add(c *Conn) {
	if len(t.heap) == t.n {
		if t.n == 0 || t.weight(c) <= t.weight(&t.heap[0]) {
			return
		}
		c.named()
		t.heap[0] = *c
		t.down(0)
		return
	}
	c.named()
	t.heap = append(t.heap, *c)
	for i := len(t.heap) - 1; i > 0; {
		p := (i - 1) / 2
		if t.weight(&t.heap[i]) >= t.weight(&t.heap[p]) {
			break
		}
		t.heap[i], t.heap[p] = t.heap[p], t.heap[i]
		i = p
	}
}

func (t *topFlows) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(t.heap) {
			return
		}
		j := l
		if r := l + 1; r < len(t.heap) && t.weight(&t.heap[r]) < t.weight(&t.heap[l]) {
			j = r
		}
		if t.weight(&t.heap[j]) >= t.weight(&t.heap[i]) {
			return
		}
		t.heap[i], t.heap[j] = t.heap[j], t.heap[i]
		i = j
	}
}

// TopTables are the tops as tables, heaviest first: what the report and
// `flowmon flows` show.
type TopTables struct {
	Total   Row          `json:"total"`           // every flow's figures (Err 0)
	Interim uint64       `json:"interim_records"` // records left out as interim
	Flows   [2]FlowTable `json:"flows"`           // by bytes, by packets
	Src     [2]KeyTable  `json:"src"`
	Dst     [2]KeyTable  `json:"dst"`
	Ports   [2]KeyTable  `json:"ports"`
}

// FlowTable is the heaviest flows by one figure.
type FlowTable struct {
	By   string `json:"by"` // bytes or packets
	Rows []Conn `json:"rows"`
}

// KeyTable is the heaviest keys (addresses or ports) by one figure.
type KeyTable struct {
	By string `json:"by"`
	// Exact says the figures are the records' (else each is over by at
	// most its Err: Space-Saving), and Keys is how many keys it holds:
	// every one the records named while it is exact.
	Exact bool     `json:"exact"`
	Keys  int      `json:"keys"`
	Rows  []KeyRow `json:"rows"`
}

// KeyRow is one key's figures.
type KeyRow struct {
	Key string `json:"key"`
	Row
}

func figureName(f figure) string {
	if f == byPackets {
		return "packets"
	}
	return "bytes"
}

// Tables returns the top n of each table (n <= the tops' n).
func (t *Tops) Tables(n int) *TopTables {
	n = min(n, t.n)
	tt := &TopTables{Total: t.total, Interim: t.interim}
	for f := range t.flows {
		fl := &t.flows[f]
		rows := slices.Clone(fl.heap)
		slices.SortFunc(rows, func(a, b Conn) int {
			return cmp.Or(cmp.Compare(fl.weight(&b), fl.weight(&a)), cmp.Compare(a.UID, b.UID))
		})
		tt.Flows[f] = FlowTable{By: figureName(figure(f)), Rows: rows[:min(n, len(rows))]}
		var ports []KeyRow
		for b, blk := range t.ports {
			if blk == nil {
				continue
			}
			for j := range blk {
				if r := blk[j]; r.Flows > 0 {
					i := b<<8 | j
					ports = append(ports, KeyRow{Key: Port{protoNames[i>>16], uint16(i)}.String(), Row: r})
				}
			}
		}
		tt.Src[f] = keyTable(heldRows(t.src), t.src.replaced == 0, n, figure(f))
		tt.Dst[f] = keyTable(heldRows(t.dst), t.dst.replaced == 0, n, figure(f))
		tt.Ports[f] = keyTable(ports, true, n, figure(f))
	}
	return tt
}

func heldRows(h *heavy[addrKey]) []KeyRow {
	rows := make([]KeyRow, len(h.entries))
	for i := range h.entries {
		rows[i] = KeyRow{Key: h.entries[i].key.String(), Row: h.entries[i].Row}
	}
	return rows
}

// keyTable ranks rows by f and keeps the first n.
func keyTable(rows []KeyRow, exact bool, n int, f figure) KeyTable {
	slices.SortFunc(rows, func(a, b KeyRow) int {
		return cmp.Or(cmp.Compare(b.get(f), a.get(f)), cmp.Compare(a.Key, b.Key))
	})
	return KeyTable{By: figureName(f), Exact: exact, Keys: len(rows), Rows: rows[:min(n, len(rows))]}
}
