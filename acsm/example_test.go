package acsm_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/capture"
)

// A worker owns one Tracker and feeds it every packet of its shard; an
// ended flow's Event carries what a flow record needs.
func Example() {
	tr, err := acsm.New(acsm.Config{Capacity: 100_000, FPRate: 0.001}) // kbf, Zeek machine, aging on
	if err != nil {
		panic(err)
	}
	c, s := netip.MustParseAddrPort("192.0.2.7:51000"), netip.MustParseAddrPort("198.51.100.1:443")
	send := func(fromClient bool, f capture.TCPFlags) acsm.Event {
		src, dst := c, s
		if !fromClient {
			src, dst = s, c
		}
		k := capture.Key{Src: src.Addr(), Dst: dst.Addr(), SrcPort: src.Port(), DstPort: dst.Port(), Proto: capture.ProtoTCP}
		ck, rev := k.Canonical()
		p := capture.Packet{Timestamp: time.Unix(1e9, 0), Key: ck, Reversed: rev, Hash: ck.Hash(), HasTCP: true, Flags: f}
		return tr.Observe(&p)
	}
	send(true, capture.SYN)
	send(false, capture.SYN|capture.ACK)
	ev := send(true, capture.RST)
	fmt.Println(ev.Ended, ev.State, ev.Originator())
	tr.Flush(time.Unix(1e9, 0)) // the end of the trace: ages to it and publishes the counts
	fmt.Println(tr.Counts().Ended)
	// Output:
	// true RSTO tcp 192.0.2.7:51000 -> 198.51.100.1:443
	// map[RSTO:1]
}
