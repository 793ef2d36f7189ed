package flowtable

import (
	"net/netip"
	"unsafe"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/hashmix"
	"github.com/flowmon/flowmon/internal/memhint"
)

// The flow table's storage: an open-addressing table of fixed size and an
// array of flows, both allocated when the table is made and never grown,
// so that a flow costs no allocation and memory is bounded by max-flows.
//
// Layout:
//
//	slotMeta   24 bytes, two per flow of the cap (slotCount): hash (0:
//	           empty), deadline (packet time, ns), index of its flowSlot
//	flowSlot   64 bytes, one per flow of the cap: key (packed, 38),
//	           state and flags, uid seed (8); one line
//	record    192 bytes, one per flow of the cap, only when records are
//	           written: first/last (16), packets (16), conn.log fields
//	           (152); three lines
//	parent      8 bytes per flow of the cap, with the records: the
//	           flow's tunnel parent
//	free        4 bytes per flow of the cap: the flowSlots released
//	endedFlow  24 bytes per flow of the cap at most: the ended queue
//
// so 64 + 48 + 4 = 116 bytes per flow of the cap (316 when writing
// records), plus the queue. Probing and the sweep read only metas (2.7 a
// cache line) and touch a flowSlot at a match; the table is at most half
// full. The flowSlots are handed out
// lowest first and reused last released first, so the pages that take
// memory follow the most flows open at once, not the cap.
//
// Probing is linear from the slot hashmix gives the flow hash (mixed
// with a seed of the table's own, as the shards take the hash's top
// bits); a match is a meta with the flow's hash whose slot holds the
// flow's key. Deletion shifts the following metas of the run back
// (Knuth's Algorithm R; a flowSlot never moves), so there are no
// tombstones and a full table does not degrade.

// slotMeta is the part of a slot that probing and sweeping read.
type slotMeta struct {
	hash     uint64 // the flow hash with bit 0 set; 0: empty
	deadline int64  // packet time (UnixNano) the flow times out at; maxTime for an ended flow
	idx      uint32 // the flow's flowSlot
}

// flowSlot is one open flow as every packet needs it: one cache line (the
// table is page-aligned), read and written at each of the flow's packets.
type flowSlot struct {
	key       packedKey // 38 bytes
	state     acsm.ConnState
	ended     bool
	written   bool
	origIsDst bool
	// attempt says the flow began with a pure SYN and has had no answer
	// (acsm.S0) since: it ends AttemptDelay after that SYN (Table.Packet).
	attempt bool
	// win is the flow's packets in the flow counter's current window not
	// yet added to it: the counter gets them in one insertion when the
	// flow leaves the table or the window ends (flushCount), not one a
	// packet, and a packet touches no line of the counter's filter.
	win  uint32
	uid  uint64 // seed of the flow's uid (uid.go), at 48
	hash uint64 // the flow hash, the counter's key
}

// recordFields are a flow's fields that only its record reads, beside its
// flowSlot at the same index in their own array, which exists only when
// the table writes records: 192 bytes, three lines.
type recordFields struct {
	first, last int64     // packet times (UnixNano)
	pkts        [2]uint64 // packets from Key.Src, from Key.Dst
	conn        Conn
	unknown     uint32 // packets the ACSM answered "don't know" (record.Flow.Confidence)
	interimAt   uint32 // seconds from first to the last interim record (Table.interim)
}

// packedKey is a capture.Key without pointers (netip.Addr holds one), so
// the slots are not scanned by the garbage collector: addresses as 16
// bytes and their families. Zones are not kept (the decoder sets none).
type packedKey struct {
	src, dst         [16]byte
	srcPort, dstPort uint16
	proto            uint8
	fams             uint8 // bits 0-1: Src's family (0 none, 1 IPv4, 2 IPv6); bits 2-3: Dst's
}

func famOf(a netip.Addr) uint8 {
	switch {
	case a.Is4():
		return 1
	case a.Is6():
		return 2
	}
	return 0
}

func packKey(k *capture.Key) packedKey {
	return packedKey{src: k.Src.As16(), dst: k.Dst.As16(), srcPort: k.SrcPort, dstPort: k.DstPort, proto: k.Proto,
		fams: famOf(k.Src) | famOf(k.Dst)<<2}
}

func unpackAddr(b [16]byte, fam uint8) netip.Addr {
	switch fam {
	case 1:
		return netip.AddrFrom4([4]byte(b[12:]))
	case 2:
		return netip.AddrFrom16(b)
	}
	return netip.Addr{}
}

func (k *packedKey) key() capture.Key {
	return capture.Key{Src: unpackAddr(k.src, k.fams&3), Dst: unpackAddr(k.dst, k.fams>>2&3),
		SrcPort: k.srcPort, DstPort: k.dstPort, Proto: k.proto}
}

// slotCount is the table's size for a cap: twice it, a load factor of at
// most 1/2. A linear probe for a missing key reads (1+1/(1-a)^2)/2 metas
// on average at load a (Knuth, 6.4): 2.5, one or two cache lines, against
// 8.5 at a load of 3/4. Every new flow's packet probes for a missing key,
// and under a flood the table is at its cap, so the probe's length is
// worth the 16 bytes a flow of the cap the extra metas take
// (docs/results/pipeline.md, "The flow table's per-flow work").
func slotCount(maxFlows int) int { return 2 * maxFlows }

// flowTableSeed decorrelates the table's index from the shard's (the
// hash's top bits).
const flowTableSeed = 0x6a09e667f3bcc909

const maxTime = int64(^uint64(0) >> 1)

func slotTag(h uint64) uint64 { return h | 1 }

// home is a tagged hash's first slot.
func (t *Table) home(tag uint64) int {
	return int(hashmix.Reduce(hashmix.Mix(tag^flowTableSeed), uint64(len(t.meta))))
}

func (t *Table) next(i int) int {
	if i++; i == len(t.meta) {
		return 0
	}
	return i
}

// lookup finds the packet's flow: its slot and true, or the empty slot
// that ends its probe and false.
func (t *Table) lookup(tag uint64, k *packedKey) (int, bool) {
	for i := t.home(tag); ; i = t.next(i) {
		switch t.meta[i].hash {
		case 0:
			return i, false
		case tag:
			if t.slots[t.meta[i].idx].key == *k {
				return i, true
			}
		}
	}
}

// find is the slot of the flow of hash tag and uid seed uid, or -1.
func (t *Table) find(tag, uid uint64) int {
	for i := t.home(tag); t.meta[i].hash != 0; i = t.next(i) {
		if t.meta[i].hash == tag && t.slots[t.meta[i].idx].uid == uid {
			return i
		}
	}
	return -1
}

// freeSlot is the first empty slot of tag's probe.
func (t *Table) freeSlot(tag uint64) int {
	i := t.home(tag)
	for t.meta[i].hash != 0 {
		i = t.next(i)
	}
	return i
}

// remove empties slot i and shifts the rest of its run back so that
// every flow stays reachable from its home.
func (t *Table) remove(i int) {
	t.flushCount(t.meta[i].idx)
	t.count--
	t.free = append(t.free, t.meta[i].idx) // within its capacity, maxFlows
	n := len(t.meta)
	for j := i; ; {
		j = t.next(j)
		h := t.meta[j].hash
		if h == 0 {
			break
		}
		// The flow at j may fill i unless its home lies cyclically in (i, j].
		home := t.home(h)
		dj, di := j-home, j-i
		if dj < 0 {
			dj += n
		}
		if di < 0 {
			di += n
		}
		if dj >= di {
			t.meta[i] = t.meta[j]
			i = j
		}
	}
	t.meta[i] = slotMeta{}
}

// victim is the flow to time out early when the table is at its cap: of
// the first evictSample flows from tag's home, the one with the earliest
// deadline (an idle handshake before an idle established flow; an ended
// flow only if all are ended), the first at a tie.
func (t *Table) victim(tag uint64) int {
	best, seen, want := -1, 0, min(evictSample, t.count)
	for i := t.home(tag); seen < want; i = t.next(i) {
		m := &t.meta[i]
		if m.hash == 0 {
			continue
		}
		seen++
		if best < 0 || m.deadline < t.meta[best].deadline {
			best = i
		}
	}
	return best
}

// evictSample is how many flows victim compares: a sample of 8 from a
// random place holds a flow among the oldest eighth of deadlines with
// probability 1-(7/8)^8 = 0.66, and costs two or three cache lines.
const evictSample = 8

// PrefetchHome starts loading the metas where the probe for flow hash h
// begins (its home and the next slots, two lines), without reading them.
// A batch calls it well ahead of PrefetchFlow, which reads them.
func (t *Table) PrefetchHome(h uint64) {
	i := t.home(slotTag(h))
	j := min(i+2, len(t.meta)-1)
	memhint.Prefetch2(unsafe.Pointer(&t.meta[i]), unsafe.Pointer(&t.meta[j]))
}

// PrefetchFlow starts loading the flowSlot that a packet of flow hash h
// will write: the flow's own if the table holds it, else, when the table
// is at its cap, the slot of the flow victim would time out for it (a new
// flow takes over that slot, so both the victim's record and the new
// flow's start hit lines already on their way), or, for a SYN (syn: which
// the table sheds at the cap), the flow counter's buckets. It probes the
// metas (which PrefetchHome brought in) and changes nothing; the victim
// may differ by the time the packet comes, which costs only the hint.
// Where the first metas are all taken by other flows (a probe at the
// cap's load of 3/4 is 8.5 metas long on average) a SYN is taken to be
// new: a wrong guess costs a hint, where the victim's search would cost
// the metas' lines.
func (t *Table) PrefetchFlow(h uint64, syn bool) {
	tag := slotTag(h)
	i := t.home(tag)
	for range 4 {
		switch t.meta[i].hash {
		case 0:
			if t.count >= t.maxFlows && !syn {
				t.prefetchSlot(t.meta[t.victim(tag)].idx)
			}
			t.prefetchShed(h, syn)
			return
		case tag:
			t.prefetchSlot(t.meta[i].idx)
			return
		}
		i = t.next(i)
	}
	t.prefetchShed(h, syn)
}

// prefetchShed starts loading the flow counter's buckets for a SYN of a
// new flow that the table, at its cap, will shed (shed).
func (t *Table) prefetchShed(h uint64, syn bool) {
	if syn && t.count >= t.maxFlows && t.counter != nil && !t.counter.Refusing() {
		t.counter.Prefetch(h)
	}
}

// prefetchSlot starts loading flowSlot idx and, when records are written,
// its record's three lines.
func (t *Table) prefetchSlot(idx uint32) {
	e := unsafe.Pointer(&t.slots[idx])
	if t.recs == nil {
		memhint.Prefetch2(e, e)
		return
	}
	r := unsafe.Pointer(&t.recs[idx])
	memhint.Prefetch2(e, r)
	memhint.Prefetch2(unsafe.Add(r, 64), unsafe.Add(r, 128))
}

// flushCount adds the packets flowSlot idx holds for the current window to
// the flow counter.
func (t *Table) flushCount(idx uint32) {
	if e := &t.slots[idx]; e.win > 0 && t.counter != nil {
		t.counter.AddN(e.hash, uint64(e.win))
		e.win = 0
	}
}

// FlushCounts adds every flow's packets of the current window to the flow
// counter: before the counter's window ends, and at the end of the run.
// The metas are read in order, but the slots they point to and the
// counter's buckets are anywhere: each is prefetched some flows ahead,
// the buckets through the slots prefetched before.
func (t *Table) FlushCounts() {
	const slotAhead, bucketAhead = 16, 8
	for i := range t.meta {
		if j := i + slotAhead; j < len(t.meta) && t.meta[j].hash != 0 {
			t.prefetchSlot(t.meta[j].idx)
		}
		if j := i + bucketAhead; j < len(t.meta) && t.meta[j].hash != 0 && t.counter != nil {
			if e := &t.slots[t.meta[j].idx]; e.win > 0 {
				t.counter.Prefetch(e.hash)
			}
		}
		if t.meta[i].hash != 0 {
			t.flushCount(t.meta[i].idx)
		}
	}
}
