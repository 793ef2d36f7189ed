// Package dedupeval measures the dedup stage (pipeline/dedup) on a
// synthetic stream of SPAN duplicates against an exact reference:
// `flowmon eval fbf`'s dedup table.
package dedupeval

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/pipeline/dedup"
)

// EvalResult is the outcome of one run over a synthetic stream.
type EvalResult struct {
	Config                  dedup.Config
	Packets, Copies, Unique int
	CopiesKept              int // groups of identical packets that kept two or more
	UniqueDropped           int // groups that kept none: unique packets wrongly dropped
	Duplicates              uint64
	EstimatedFPRate         float64
	MemoryBytes             uint64
	NanosPerPacket          float64
}

// RunStream checks a synthetic stream (gen.SPANStream) with a Dedup for c and
// compares it with the exact reference: packets with equal (unhashed)
// fingerprint fields form a group while they arrive within the window of
// the group's first packet; exactly one packet per group must be kept.
// Packets arriving between Window and the filter's longest memory are
// left out of the comparison (either answer is right).
func RunStream(c dedup.Config, evs []gen.SPANPacket) (EvalResult, error) {
	d, err := dedup.New(c)
	if err != nil {
		return EvalResult{}, err
	}
	type identity struct {
		hash                 uint64
		rev                  bool
		frag                 uint8
		flags                uint16
		ipid, seq, ack, plen uint32
		iplen, win           uint16
		payload              string
	}
	type group struct {
		start time.Time
		kept  int
	}
	c = d.Config()
	maxMem := c.Window * time.Duration(c.Past+2) / time.Duration(c.Past+1)
	ref := map[identity]*group{}
	var all []*group
	res := EvalResult{Config: c}
	var spent time.Duration
	for i := range evs {
		p := &evs[i].P
		start := time.Now() // measuring the stage itself, not on the data path
		dropped := d.Seen(p)
		spent += time.Since(start)
		res.Packets++
		id := identity{p.Key.Hash(), p.Reversed, uint8(p.Fragment), uint16(p.Flags), p.IPID, p.Seq, p.Ack, p.PayloadLen,
			p.IPLen, p.Window, string(p.Payload[:min(c.PayloadBytes, len(p.Payload))])}
		g := ref[id]
		if g != nil && p.Timestamp.Sub(g.start) > c.Window {
			if p.Timestamp.Sub(g.start) <= maxMem {
				continue
			}
			g = nil
		}
		if g == nil {
			g = &group{start: p.Timestamp}
			ref[id] = g
			all = append(all, g)
		} else {
			res.Copies++
		}
		if !dropped {
			g.kept++
		}
	}
	res.Unique = len(all)
	for _, g := range all {
		switch {
		case g.kept == 0:
			res.UniqueDropped++
		case g.kept > 1:
			res.CopiesKept++
		}
	}
	_, res.Duplicates, _ = d.Counts()
	res.EstimatedFPRate = d.EstimatedFPRate()
	res.MemoryBytes = d.MemoryBytes()
	res.NanosPerPacket = float64(spent.Nanoseconds()) / float64(max(res.Packets, 1))
	return res, nil
}

// Eval runs the dedup stage over a synthetic 200 kpps stream with 2% SPAN
// duplicates and writes a markdown table to w.
func Eval(w io.Writer, seed uint64) error {
	const n, pps = 400_000, 200_000
	evs := gen.SPANStream(seed, n, 5000, pps, 0.02, 40*time.Millisecond)
	var b strings.Builder
	fmt.Fprintf(&b, "## Dedup stage on a synthetic stream\n\n")
	fmt.Fprintf(&b, "%d packets at %d packets/s over 5000 flows (80%% TCP, 25%% IPv6), plus a SPAN copy of 2%% of them 1 µs to 40 ms later with another TTL and 1-2 VLAN tags. Window 50 ms, sized for 10000 packets per window: the fingerprint table (the default; its false-positive rate is its fingerprints', whatever the target) and the paper's FBF (N = 1, t = 25 ms) with blocked and standard filters. *copies kept*: groups of identical packets that kept more than one (must be 0); *unique dropped*: groups that kept none. Seed %d.\n\n", n, pps, seed)
	fmt.Fprintf(&b, "| fp target | window | packets | SPAN copies | copies kept | unique dropped | dropped rate | estimate at end | memory |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, fp := range []float64{1e-3, 1e-4, 1e-6} {
		for _, st := range []struct {
			name          string
			fbf, standard bool
		}{{"table", false, false}, {"FBF, blocked", true, false}, {"FBF, standard", true, true}} {
			r, err := RunStream(dedup.Config{Window: 50 * time.Millisecond, PacketsPerWindow: 10_000, FPRate: fp, FBF: st.fbf, Standard: st.standard}, evs)
			if err != nil {
				return fmt.Errorf("dedup eval: %w", err)
			}
			fmt.Fprintf(&b, "| %g | %s | %d | %d | %d | %d | %.3g | %.3g | %d KiB |\n", fp, st.name, r.Packets, r.Copies, r.CopiesKept,
				r.UniqueDropped, float64(r.UniqueDropped)/float64(r.Unique), r.EstimatedFPRate, r.MemoryBytes/1024)
		}
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
