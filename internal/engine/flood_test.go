package engine

import (
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
)

// TestSYNFloodKeepsMemory feeds 300,000 spoofed SYNs through a pipeline
// sized for 2,000 flows: the flow table stays at its cap, the heap does
// not grow with the flood, and every SYN is still one flow record. (Which
// state the records carry is the overloaded ACSM's answer: a flood past
// its capacity raises its error, which is what it measures.)
func TestSYNFloodKeepsMemory(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ACSM.Capacity, cfg.FlowCount.ExpectedFlows, cfg.MaxFlows = 2000, 2000, 2000
	cfg.Workers = 1
	pl, err := NewPipeline(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dst := netip.MustParseAddr("192.0.2.80")
	t0 := time.Unix(1700000000, 0)
	var p capture.Packet
	syn := func(i int) {
		src := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		k := capture.Key{Src: src, Dst: dst, SrcPort: uint16(1024 + i%60000), DstPort: 80, Proto: capture.ProtoTCP}
		p = capture.Packet{Timestamp: t0.Add(time.Duration(i) * 10 * time.Microsecond), HasTCP: true,
			Flags: capture.SYN, Seq: uint32(i), IPID: uint32(i), TTL: 64, IPLen: 40, WireLen: 54, CapLen: 54,
			EtherType: capture.EtherTypeIPv4, LinkType: capture.LinkEthernet}
		p.Key, p.Reversed = k.Canonical()
		p.Hash = k.Hash()
		pl.Packet(&p)
	}
	const warm, flood = 20000, 300000
	for i := range warm {
		syn(i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := warm; i < flood; i++ {
		syn(i)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if n := pl.shards[0].flows.count; n > cfg.MaxFlows {
		t.Errorf("flow table holds %d flows, cap %d", n, cfg.MaxFlows)
	}
	if grow := int64(after.HeapAlloc) - int64(before.HeapAlloc); grow > 4<<20 {
		t.Errorf("heap grew by %d bytes over %d more flood flows", grow, flood-warm)
	}
	var s Summary
	if err := pl.Finish(&s, p.Timestamp); err != nil {
		t.Fatal(err)
	}
	var states uint64
	for _, n := range s.ConnStates {
		states += n
	}
	if s.Flows != flood || states != flood || s.FlowsTimedOut < flood-uint64(cfg.MaxFlows) {
		t.Errorf("flows %d, conn_states sum %d, timed out %d; want %d", s.Flows, states, s.FlowsTimedOut, flood)
	}
	t.Logf("S0 %d of %d flood flows; the rest are the overloaded ACSM's errors", s.ConnStates["S0"], flood)
}
