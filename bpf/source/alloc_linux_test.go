//go:build linux

package source_test

import (
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/flowmon/flowmon/bpf"
	"github.com/flowmon/flowmon/bpf/source"
	. "github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/gen/gentest"
	"github.com/flowmon/flowmon/internal/testutil/bpftest"
)

// tcpFrameWithPayload returns the first frame of a gen trace that
// decodes as TCP with more payload than a record carries.
func tcpFrameWithPayload(t *testing.T) []byte {
	t.Helper()
	var frame []byte
	err := source.EachFrame(gentest.Trace(t, 200, gen.LinkEthernet), func(link uint16, data []byte) {
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
	s, err := source.NewRingOn(objs, time.Second)
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

// TestEBPFRecordPayloadIsTheFrames: a record carries the packet's first
// bpf.PayloadMax payload bytes as the decoded frame has them, so what
// reads a packet's payload (dedup's fingerprint; pipeline/dedup pins
// that it reads no more than a record carries) sees the same bytes from
// either source.
func TestEBPFRecordPayloadIsTheFrames(t *testing.T) {
	run := newProgRunner(t)
	frame := tcpFrameWithPayload(t)
	rec, _, err := run.run(run.objs.XDPProgram(), frame)
	if err != nil || rec == nil {
		t.Fatalf("record %v, %v", rec, err)
	}
	var got, want Packet
	if reason := source.FromRecord(&got, rec, 0); reason != ReasonNone {
		t.Fatalf("record's reason %v", reason)
	}
	Decode(&want, LinkEthernet, frame, len(frame), time.Time{})
	n := min(len(want.Payload), bpf.PayloadMax)
	if n < bpf.PayloadMax {
		t.Fatalf("the test frame has %d payload bytes, fewer than a record carries (%d)", len(want.Payload), bpf.PayloadMax)
	}
	if string(got.Payload[:n]) != string(want.Payload[:n]) || got.PayloadLen != want.PayloadLen {
		t.Errorf("record's payload %x (%d bytes), the frame's %x (%d)", got.Payload, got.PayloadLen, want.Payload[:n], want.PayloadLen)
	}
}
