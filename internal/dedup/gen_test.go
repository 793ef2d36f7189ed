package dedup

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/gen"
)

// TestGeneratedTrace runs the stage over a `flowmon gen` trace with 2% SPAN
// duplicates whose TTL is one lower (the IPv4 checksum recomputed), decoded
// by the capture decoder, against the exact reference of RunStream and the
// generator's own duplicate marks.
func TestGeneratedTrace(t *testing.T) {
	o := gen.DefaultOptions()
	o.Flows, o.Duration, o.Seed, o.DupRate, o.DupTTLChange = 4000, 4*time.Second, 3, 0.02, true
	g, err := gen.New(o)
	if err != nil {
		t.Fatal(err)
	}
	var evs []event
	var gp gen.Packet
	marked := 0
	for g.Next(&gp) {
		var p capture.Packet
		if r := capture.Decode(&p, uint16(o.Link), gp.Data, gp.Length, gp.Timestamp); r != capture.ReasonNone {
			continue // not a flow packet
		}
		p.Payload = bytes.Clone(p.Payload)
		evs = append(evs, event{p: p, dup: gp.Duplicate})
		if gp.Duplicate {
			marked++
		}
	}
	if len(evs) == 0 || marked == 0 {
		t.Fatalf("generator produced %d packets, %d duplicates", len(evs), marked)
	}
	span := evs[len(evs)-1].p.Timestamp.Sub(evs[0].p.Timestamp)
	// Size for the busiest 50 ms of the trace (flows start in bursts).
	var perWindow uint64
	for i, j := 0, 0; i < len(evs); i++ {
		for evs[i].p.Timestamp.Sub(evs[j].p.Timestamp) > 50*time.Millisecond {
			j++
		}
		perWindow = max(perWindow, uint64(i-j+1))
	}
	const fp = 1e-4
	r, err := RunStream(Config{Window: 50 * time.Millisecond, PacketsPerWindow: perWindow, FPRate: fp}, evs)
	if err != nil {
		t.Fatal(err)
	}
	if r.CopiesKept != 0 {
		t.Errorf("%d groups of identical packets kept a copy", r.CopiesKept)
	}
	mean := fp * float64(r.Unique)
	if bound := mean + 5*math.Sqrt(mean) + 1; float64(r.UniqueDropped) > bound {
		t.Errorf("%d of %d unique packets dropped, bound %.1f", r.UniqueDropped, r.Unique, bound)
	}
	// Every packet the generator marked as a duplicate is dropped, except
	// where the original was itself dropped (counted in UniqueDropped).
	d, _ := New(Config{Window: 50 * time.Millisecond, PacketsPerWindow: perWindow, FPRate: fp})
	kept := 0
	for i := range evs {
		if !d.Seen(&evs[i].p) && evs[i].dup {
			kept++
		}
	}
	if kept > r.UniqueDropped {
		t.Errorf("%d marked duplicates kept, more than the %d originals dropped", kept, r.UniqueDropped)
	}
	t.Logf("gen trace: %d packets over %v (busiest 50 ms: %d), %d marked duplicates, %d copies by the reference; copies kept %d, unique dropped %d of %d (target %g); memory %d B",
		len(evs), span.Round(time.Millisecond), perWindow, marked, r.Copies, r.CopiesKept, r.UniqueDropped, r.Unique, fp, r.MemoryBytes)
}
