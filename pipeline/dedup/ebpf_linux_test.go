package dedup

import (
	"testing"

	"github.com/flowmon/flowmon/bpf"
)

// TestEBPFRecordCoversFingerprint: an eBPF capture record carries at
// least the payload bytes the fingerprint reads at most, so a packet from
// the eBPF source has the fingerprint of the same packet decoded from its
// frame, whatever PayloadBytes is (capture's TestEBPFRecordPayloadIsTheFrames
// checks that the bytes are the frame's).
func TestEBPFRecordCoversFingerprint(t *testing.T) {
	var r bpf.Record
	if bpf.PayloadMax < MaxPayloadBytes || len(r.Payload) < MaxPayloadBytes {
		t.Fatalf("a record carries %d payload bytes (its array %d), the fingerprint reads up to %d",
			bpf.PayloadMax, len(r.Payload), MaxPayloadBytes)
	}
}
