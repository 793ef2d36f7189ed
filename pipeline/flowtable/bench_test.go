package flowtable

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
)

// benchPackets returns n TCP packets of n distinct flows (random IPv4
// sources to one server), each flow's Hash set as the decoder sets it.
func benchPackets(n int, seed uint64) []capture.Packet {
	r := rand.New(rand.NewPCG(seed, 1))
	dst := netip.MustParseAddr("192.0.2.80")
	pkts := make([]capture.Packet, n)
	for i := range pkts {
		var a [4]byte
		v := r.Uint32()
		a[0], a[1], a[2], a[3] = 10|byte(v>>24)&0x3f, byte(v>>16), byte(v>>8), byte(v)
		k := capture.Key{Src: netip.AddrFrom4(a), Dst: dst, SrcPort: uint16(1024 + r.IntN(60000)), DstPort: 80,
			Proto: capture.ProtoTCP}
		p := &pkts[i]
		*p = capture.Packet{HasTCP: true, Flags: capture.ACK, Seq: r.Uint32(), IPID: uint32(i), TTL: 64, IPLen: 40,
			WireLen: 54, CapLen: 54, EtherType: capture.EtherTypeIPv4, LinkType: capture.LinkEthernet}
		p.Key, p.Reversed = k.Canonical()
		p.Hash = k.Hash()
	}
	return pkts
}

// BenchmarkFlowTable is one packet through the flow table holding `open`
// flows: "steady" is a packet of a flow the table holds (random order
// over the flows), "new" a packet of a new flow with the table at its cap
// (a flood of new sources: each one times out an idle flow).
func BenchmarkFlowTable(b *testing.B) {
	for _, open := range []int{100_000, 1_000_000} {
		pkts := benchPackets(open, 1)
		t0 := time.Unix(1700000000, 0)
		est := acsm.Event{Result: acsm.Found, State: acsm.S1}
		newEv := acsm.Event{New: true, State: acsm.S0}
		fill := func(tab *Table) time.Time {
			now := t0
			for i := range pkts {
				now = now.Add(time.Microsecond)
				pkts[i].Timestamp = now
				tab.Packet(&pkts[i], &newEv)
				tab.Packet(&pkts[i], &est)
			}
			return now
		}
		b.Run(fmt.Sprintf("steady/open=%d", open), func(b *testing.B) {
			tab := newFlowTable(nil, nil, open, time.Minute, time.Hour)
			now := fill(tab)
			order := rand.New(rand.NewPCG(2, 2)).Perm(open)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				p := &pkts[order[i]]
				now = now.Add(time.Microsecond)
				p.Timestamp = now
				tab.Packet(p, &est)
				if i++; i == open {
					i = 0
				}
			}
			tab.Finish() // frees the table (off the Go heap)
		})
		b.Run(fmt.Sprintf("new/open=%d", open), func(b *testing.B) {
			tab := newFlowTable(nil, nil, open, time.Minute, time.Hour)
			now := fill(tab)
			fresh := benchPackets(1<<20, 3)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				p := &fresh[i&(1<<20-1)]
				now = now.Add(time.Microsecond)
				p.Timestamp = now
				p.Seq++ // another flow's first packet if this one was seen
				tab.Packet(p, &newEv)
				i++
			}
			tab.Finish()
		})
	}
}
