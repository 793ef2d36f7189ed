package capture

import (
	"testing"
	"unsafe"
)

// TestPacketSize pins the packet's size: the pipeline copies every packet
// into a worker's batch (pipeline's batch.add, whose claim fetches the
// copy's lines ahead), so each byte costs every packet. That is why the
// tunnels' carriers, which only tunnelled packets have, are behind
// Packet.Carriers, and why the small fields sit in padding (fragData,
// the tunnel fields, ipTail): 176 bytes, three cache lines less 16.
func TestPacketSize(t *testing.T) {
	if n := unsafe.Sizeof(Packet{}); n != 176 {
		t.Errorf("Packet is %d bytes, want 176", n)
	}
}
