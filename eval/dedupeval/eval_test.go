package dedupeval

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/pipeline/dedup"
)

// TestSPANDuplicates is the acceptance test: a 200 kpps stream with 2% SPAN
// duplicates (the same packet 1 µs to 40 ms later, another TTL and VLAN
// tags): every duplicate inside the 50 ms window is removed (no group of
// identical packets keeps two), and the unique packets wrongly dropped stay
// under the false-positive target (Poisson bound: target·U + 5·sqrt(target·U)
// + 1). A unique packet dropped as a false positive is not inserted
// (Algorithm 1), so its SPAN copy may then be kept in its place: the count
// stays exact, and the group counts as kept once.
func TestSPANDuplicates(t *testing.T) {
	evs := gen.SPANStream(1, 400_000, 5000, 200_000, 0.02, 40*time.Millisecond)
	for _, fp := range []float64{1e-3, 1e-6} {
		for _, st := range []struct{ fbf, standard bool }{{false, false}, {true, false}, {true, true}} {
			fbf, standard := st.fbf, st.standard
			r, err := RunStream(dedup.Config{Window: 50 * time.Millisecond, PacketsPerWindow: 10_000, FPRate: fp, FBF: fbf, Standard: standard}, evs)
			if err != nil {
				t.Fatal(err)
			}
			if r.CopiesKept != 0 {
				t.Errorf("fp=%g fbf=%t standard=%t: %d groups kept a duplicate", fp, fbf, standard, r.CopiesKept)
			}
			mean := fp * float64(r.Unique)
			if bound := mean + 5*math.Sqrt(mean) + 1; float64(r.UniqueDropped) > bound {
				t.Errorf("fp=%g fbf=%t standard=%t: %d of %d unique packets dropped, bound %.1f", fp, fbf, standard, r.UniqueDropped, r.Unique, bound)
			}
			if kept := r.Packets - int(r.Duplicates); kept < r.Unique-r.UniqueDropped {
				t.Errorf("fp=%g fbf=%t standard=%t: %d packets kept, fewer than one per group: %d", fp, fbf, standard, kept, r.Unique-r.UniqueDropped)
			}
			t.Logf("fp target %g fbf=%t standard=%t: %d packets, %d copies, %d unique; duplicates kept %d; unique dropped %d (%.2g); memory %d B; estimate %.3g",
				fp, fbf, standard, r.Packets, r.Copies, r.Unique, r.CopiesKept, r.UniqueDropped, float64(r.UniqueDropped)/float64(r.Unique), r.MemoryBytes, r.EstimatedFPRate)
		}
	}
}

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
	var evs []gen.SPANPacket
	var gp gen.Packet
	marked := 0
	for g.Next(&gp) {
		var p capture.Packet
		if r := capture.Decode(&p, uint16(o.Link), gp.Data, gp.Length, gp.Timestamp); r != capture.ReasonNone {
			continue // not a flow packet
		}
		p.Payload = bytes.Clone(p.Payload)
		evs = append(evs, gen.SPANPacket{P: p, Dup: gp.Duplicate})
		if gp.Duplicate {
			marked++
		}
	}
	if len(evs) == 0 || marked == 0 {
		t.Fatalf("generator produced %d packets, %d duplicates", len(evs), marked)
	}
	span := evs[len(evs)-1].P.Timestamp.Sub(evs[0].P.Timestamp)
	// Size for the busiest 50 ms of the trace (flows start in bursts).
	var perWindow uint64
	for i, j := 0, 0; i < len(evs); i++ {
		for evs[i].P.Timestamp.Sub(evs[j].P.Timestamp) > 50*time.Millisecond {
			j++
		}
		perWindow = max(perWindow, uint64(i-j+1))
	}
	const fp = 1e-4
	r, err := RunStream(dedup.Config{Window: 50 * time.Millisecond, PacketsPerWindow: perWindow, FPRate: fp}, evs)
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
	d, _ := dedup.New(dedup.Config{Window: 50 * time.Millisecond, PacketsPerWindow: perWindow, FPRate: fp})
	kept := 0
	for i := range evs {
		if !d.Seen(&evs[i].P) && evs[i].Dup {
			kept++
		}
	}
	if kept > r.UniqueDropped {
		t.Errorf("%d marked duplicates kept, more than the %d originals dropped", kept, r.UniqueDropped)
	}
	t.Logf("gen trace: %d packets over %v (busiest 50 ms: %d), %d marked duplicates, %d copies by the reference; copies kept %d, unique dropped %d of %d (target %g); memory %d B",
		len(evs), span.Round(time.Millisecond), perWindow, marked, r.Copies, r.CopiesKept, r.UniqueDropped, r.Unique, fp, r.MemoryBytes)
}
