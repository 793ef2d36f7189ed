package pipeline

import (
	"net/netip"
	"testing"

	"github.com/flowmon/flowmon/capture"
)

// TestClaimCoversPacket: batch.claim and addCarriers fetch the lines at
// the first three 64-byte steps and the last byte of a Packet and a
// Carriers, which are all of their lines only for 129 to 192 bytes.
func TestClaimCoversPacket(t *testing.T) {
	for _, c := range []struct {
		name string
		size uintptr
	}{{"Packet", packetSize}, {"Carriers", carriersSize}} {
		if c.size <= 128 || c.size > 192 {
			t.Errorf("%s is %d bytes: the claims fetch the lines of 129 to 192", c.name, c.size)
		}
	}
}

// TestBatchKeepsCarriers: a tunnelled packet's carriers are copied into
// the batch, so they stay its own when the source decodes its next
// packet into the same Packet and Carriers; an untunnelled packet takes
// none.
func TestBatchKeepsCarriers(t *testing.T) {
	carrier := func(port uint16) capture.Carriers {
		k := capture.Key{Src: netip.MustParseAddr("192.0.2.1"), Dst: netip.MustParseAddr("192.0.2.2"),
			SrcPort: port, DstPort: capture.PortVXLAN, Proto: capture.ProtoUDP}
		return capture.Carriers{Outer: capture.Carrier{Key: k, Hash: k.Hash(), Len: uint32(port)}}
	}
	for _, handoff := range []bool{false, true} {
		b := &batch{handoff: handoff}
		var src capture.Packet
		src.Carriers = new(capture.Carriers)
		want := []capture.Carriers{carrier(1000), carrier(2000)}
		for i, c := range want {
			*src.Carriers = c // the decoder's next tunnelled packet
			src.Tunnels = 1
			b.add(&src, 0, uint64(i))
		}
		*src.Carriers = carrier(3000)
		src.Tunnels = 0 // an untunnelled packet, its carriers stale
		b.add(&src, 0, 2)
		for i, c := range want {
			if got := b.pkts[i].Carriers; got == nil || *got != c {
				t.Fatalf("handoff %v: packet %d's carriers %v, want %v", handoff, i, got, c)
			}
		}
		if b.pkts[2].Carriers != nil || b.nc != 2 {
			t.Errorf("handoff %v: an untunnelled packet has carriers %p (%d carriers)", handoff, b.pkts[2].Carriers, b.nc)
		}
	}
}

// TestBatchAddNoAllocs: copying a packet into a batch allocates nothing,
// tunnelled or not, once the batch has its carriers.
func TestBatchAddNoAllocs(t *testing.T) {
	b := &batch{handoff: true}
	var src capture.Packet
	src.Carriers = new(capture.Carriers)
	for _, tunnels := range []uint8{0, 1, 2} {
		src.Tunnels = tunnels
		if n := testing.AllocsPerRun(3*batchSize, func() {
			if b.add(&src, 1, 2) {
				b.empty()
			}
		}); n != 0 {
			t.Errorf("%d tunnels: batch.add allocates %v times a packet", tunnels, n)
		}
	}
}
