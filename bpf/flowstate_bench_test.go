//go:build linux

package bpf_test

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/bpf"
	"github.com/flowmon/flowmon/capture"
	"github.com/flowmon/flowmon/internal/testutil/bpftest"
)

// BenchmarkStateProgram times the live flow-state program on each frame
// of a trace once (Program.Benchmark with one repeat: the kernel's own
// clock around the run), in the trace's order, and reports the median
// for a flow's first packet and for the packets after it. The trace is
// FLOWMON_STATE_TRACE (e.g. make bench-replay's eth trace; its first
// 400,000 frames), else the bundled one. Its sub-benchmarks run the
// program as loaded by default (plain: no answered events, no duplicate
// window), with answered events (the machine's S0 values given, as
// pipeline/kernelflows gives them), and with the duplicate window too,
// sized as the pipeline sizes it for the dedup stage's defaults (50 ms,
// 50,000 packets a window, 32 payload bytes).
func BenchmarkStateProgram(b *testing.B) {
	bpftest.Require(b)
	name := os.Getenv("FLOWMON_STATE_TRACE")
	if name == "" {
		name = "../pcaps/sample.pcap"
	}
	r, err := capture.Open(name)
	if err != nil {
		b.Skip(err)
	}
	var frames [][]byte
	var first []bool
	seen := map[capture.Key]bool{}
	var f capture.Frame
	var p capture.Packet
	opts := capture.DefaultDecodeOptions()
	for len(frames) < 400000 && r.NextFrame(&f) == nil {
		if f.Link != 1 || opts.Decode(&p, f.Link, f.Data, f.Wire, f.Time) != capture.ReasonNone || p.Tunnels > 0 {
			continue
		}
		frames = append(frames, append([]byte(nil), f.Data...))
		first = append(first, !seen[p.Key])
		seen[p.Key] = true
	}
	r.Close()
	if len(frames) == 0 {
		b.Skip("no Ethernet frames in " + name)
	}
	plain := bpf.StateOptions{Cells: 1 << 18, Machine: stateMachine(acsm.MachineZeek)}
	answered := plain
	tab := acsm.MachineTables(acsm.MachineZeek)
	answered.Machine.S0 = make([]bool, len(tab.Conn))
	for v, c := range tab.Conn {
		answered.Machine.S0[v] = c == acsm.S0
	}
	dedup := answered
	dedup.DedupSlots, dedup.DedupWindow, dedup.DedupPayloadBytes = 15625*bpf.DedupBucketSlots, 50*time.Millisecond, 32
	for _, c := range []struct {
		name string
		opt  bpf.StateOptions
	}{{"plain", plain}, {"answered", answered}, {"answered+dedup", dedup}} {
		b.Run(c.name, func(b *testing.B) { benchState(b, c.opt, frames, first) })
	}
}

func benchState(b *testing.B, opt bpf.StateOptions, frames [][]byte, first []bool) {
	for b.Loop() {
		opt.Live = bpf.LiveXDP
		s, err := bpf.LoadState(opt)
		if err != nil {
			b.Fatal(err)
		}
		rd, err := s.NewEventReader()
		if err != nil {
			b.Fatal(err)
		}
		var newD, estD []time.Duration
		prog := s.XDPProgram()
		for i, fr := range frames {
			_, d, err := prog.Benchmark(fr, 1, nil)
			if err != nil {
				b.Fatal(err)
			}
			if first[i] {
				newD = append(newD, d)
			} else {
				estD = append(estD, d)
			}
			if i%4096 == 0 { // keep the event ring from filling
				rd.SetDeadline(time.Now())
				for {
					if _, err := rd.Read(); err != nil {
						break
					}
				}
			}
		}
		// One established flow's frame run repeatedly: the per-run
		// overhead of a test run with one repeat shows as the
		// difference from the median above.
		_, rep, err := prog.Benchmark(frames[len(frames)-1], 20000, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(rep.Nanoseconds()), "ns/repeated-pkt")
		rd.Close()
		s.Close()
		med := func(d []time.Duration) float64 {
			if len(d) == 0 {
				return 0
			}
			slices.Sort(d)
			return float64(d[len(d)/2].Nanoseconds())
		}
		b.ReportMetric(med(newD), "ns/first-pkt")
		b.ReportMetric(med(estD), "ns/later-pkt")
		b.ReportMetric(float64(len(newD)), "flows")
	}
}
