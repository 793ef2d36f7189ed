//go:build linux

package capture_test

import (
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/flowmon/flowmon/bpf"
	. "github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/internal/bpftest"
	"github.com/flowmon/flowmon/pipeline/dedup"
)

// tcpFrameWithPayload returns the first frame of a gen trace that
// decodes as TCP with more payload than a record carries.
func tcpFrameWithPayload(t *testing.T) []byte {
	t.Helper()
	var frame []byte
	err := EachFrame(genTrace(t, 200, gen.LinkEthernet), func(link uint16, data []byte) {
		var p Packet
		if frame == nil && Decode(&p, link, data, len(data), time.Time{}) == ReasonNone && p.HasTCP && len(p.Payload) > bpf.PayloadMax {
			frame = append([]byte(nil), data...)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if frame == nil {
		t.Fatalf("no TCP frame with over %d payload bytes in the trace", bpf.PayloadMax)
	}
	return frame
}

// TestEBPFNextAllocatesNothing: the eBPF source's Next, turning a record
// into a Packet, allocates nothing.
func TestEBPFNextAllocatesNothing(t *testing.T) {
	bpftest.Require(t)
	frame := tcpFrameWithPayload(t)
	objs, err := bpf.Load(bpf.Options{Rings: 1, RingSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewEBPFOn(objs, time.Second)
	if err != nil {
		objs.Close()
		t.Fatal(err)
	}
	defer s.Close()
	const runs = 2000
	// Enough records for AllocsPerRun's runs and its warm-up call.
	if _, err := objs.XDPProgram().Run(&ebpf.RunOptions{Data: frame, Repeat: runs + 100}); err != nil {
		t.Fatal(err)
	}
	var p Packet
	allocs := testing.AllocsPerRun(runs, func() {
		if err := s.Next(&p); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Next allocates %v times a record, want 0", allocs)
	}
	if got := s.Stats().Packets; got != runs+1 {
		t.Errorf("read %d records, want %d", got, runs+1)
	}
}

// TestEBPFPayloadCoversDedupFingerprint: a record carries at least the
// payload bytes dedup's fingerprint reads at most, so a packet from the
// eBPF source has the fingerprint the same packet decoded from its frame
// has, whatever dedup's payload-bytes setting.
func TestEBPFPayloadCoversDedupFingerprint(t *testing.T) {
	var r bpf.Record
	if bpf.PayloadMax < dedup.MaxPayloadBytes || len(r.Payload) < dedup.MaxPayloadBytes {
		t.Fatalf("a record carries %d payload bytes (its array %d), dedup's fingerprint reads up to %d",
			bpf.PayloadMax, len(r.Payload), dedup.MaxPayloadBytes)
	}
	run := newProgRunner(t)
	frame := tcpFrameWithPayload(t)
	rec, err := run.run(run.objs.XDPProgram(), frame)
	if err != nil || rec == nil {
		t.Fatalf("record %v, %v", rec, err)
	}
	var got, want Packet
	if reason := FromRecord(&got, rec, 0); reason != ReasonNone {
		t.Fatalf("record's reason %v", reason)
	}
	Decode(&want, LinkEthernet, frame, len(frame), time.Time{})
	for _, n := range []int{0, 16, 32, dedup.MaxPayloadBytes} {
		if g, w := dedup.Fingerprint(&got, n), dedup.Fingerprint(&want, n); g != w {
			t.Errorf("payload bytes %d: fingerprint from the record %#x, from the frame %#x", n, g, w)
		}
	}
}
