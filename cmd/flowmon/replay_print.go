package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/flowmon/flowmon/pipeline"
)

// The summary prints a packet rate only for runs of at least
// minRatePackets and minRateSeconds: below them, start-up (sizing and
// zeroing the filters) dominates the figure.
const (
	minRatePackets = 100_000
	minRateSeconds = 0.5
)

func printSummary(w io.Writer, s *pipeline.Summary) {
	if s.Interface != "" {
		fmt.Fprintf(w, "interface        %s\n", s.Interface)
	} else {
		fmt.Fprintf(w, "files            %s\n", strings.Join(s.Files, " "))
	}
	fmt.Fprintf(w, "packets          %d (%d decoded)", s.Packets, s.Decoded)
	if s.Filtered > 0 {
		fmt.Fprintf(w, "; %d more left out by the filter", s.Filtered)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "bytes            %d\n", s.Bytes)
	fmt.Fprintf(w, "flows            %d (%d closed by idle timeout)\n", s.Flows, s.FlowsTimedOut)
	printCounts(w, "link types", s.LinkTypes)
	printCounts(w, "network", s.Network)
	printCounts(w, "transport", s.Transport)
	printCounts(w, "decode errors", s.DecodeErrors)
	printCounts(w, "skipped", s.Skipped)
	if d := s.Defrag; d != nil {
		fmt.Fprintf(w, "fragments        %d taken: %d datagrams reassembled, %d fragments held at the end; %d passed unreassembled (cut short)\n",
			d.Fragments, d.Datagrams, d.Held, d.Passed)
		printCounts(w, "fragments lost", d.Dropped)
	}
	fmt.Fprintf(w, "unique packets   %d (%d duplicates dropped, which Zeek and --no-dedup count; %d retransmissions marked)", s.UniquePackets, s.Duplicates, s.Retransmissions)
	if s.DedupWindow != "" {
		fmt.Fprintf(w, ", dedup window: %s", s.DedupWindow)
	}
	fmt.Fprintln(w)
	printCounts(w, "conn states", s.ConnStates)
	for _, name := range slices.Sorted(maps.Keys(s.Records)) {
		r := s.Records[name]
		fmt.Fprintf(w, "records          %s: %d written", name, r.Written)
		if r.Failed > 0 {
			fmt.Fprintf(w, ", %d lost (the sink failed)", r.Failed)
		}
		fmt.Fprintln(w)
	}
	if o := s.OTLP; o != nil {
		fmt.Fprintf(w, "otlp             %d sent in %d requests, %d dropped, %d retries\n", o.Sent, o.Batches, o.Dropped, o.Retries)
	}
	printCounts(w, "anomalies", s.Anomalies)
	if a := s.ACSM; a != nil {
		fmt.Fprintf(w, "acsm             %s/%s, %.1f MB, %d flows started, %d unknown answers\n",
			a.Backend, a.Machine, float64(a.MemoryBytes)/(1<<20), a.NewFlows, a.Unknown)
		fmt.Fprintf(w, "acsm error       %s\n", shadowLine(&a.Shadow))
		if c := a.Counters; c.Shed > 0 || c.InsertFailures > 0 {
			fmt.Fprintf(w, "acsm overload    table full: %d idle half-open flows shed for new ones, %d new flows refused\n", c.Shed, c.InsertFailures)
		}
	}
	if s.Alerts != nil {
		fired := map[string]uint64{}
		for k, v := range s.Alerts {
			if v > 0 { // the rules that fired; every rule has a key
				fired[k] = v
			}
		}
		printCounts(w, "alerts", fired)
		if s.AlertsSuppressed > 0 {
			fmt.Fprintf(w, "alerts folded    %d repeats inside their rules' suppress windows\n", s.AlertsSuppressed)
		}
	}
	if s.KernelPackets != nil && s.KernelDrops != nil {
		fmt.Fprintf(w, "kernel           %d packets to the capture sockets, %d dropped (rings full)", *s.KernelPackets, *s.KernelDrops)
		if n := s.KernelFreezes; n != nil && *n > 0 {
			fmt.Fprintf(w, ", %d ring freezes", *n)
		}
		if n := s.KernelIfDrops; n != nil && *n > 0 {
			fmt.Fprintf(w, ", %d dropped by the interface", *n)
		}
		fmt.Fprintln(w)
	}
	if n := s.SourceStops; n != nil {
		fmt.Fprintf(w, "source stops     %d (an interface went down or away; each logged)\n", *n)
	}
	if e := s.EBPF; e != nil {
		fmt.Fprintf(w, "ebpf             at %s: %d packets seen, %d records, %d lost (rings full)", e.Attached, e.Seen, e.Emitted, e.Lost)
		if e.SampleOneIn > 1 {
			fmt.Fprintf(w, ", sampling 1 flow in %d: %d packets left out", e.SampleOneIn, e.SampledOut)
		}
		if e.FilteredOut > 0 {
			fmt.Fprintf(w, ", %d left out by the pre-filter", e.FilteredOut)
		}
		fmt.Fprintln(w)
		fails := map[string]uint64{}
		for k, v := range e.ParseFailures {
			if v > 0 {
				fails[k] = v
			}
		}
		if len(fails) > 0 {
			printCounts(w, "ebpf unparsed", fails)
		}
	}
	if k := s.KernelState; k != nil {
		fmt.Fprintf(w, "kernel state     %d frames (%d datagrams reassembled in user space): %d packets counted in %d flows, %d left to user space, %d new flows not kept for want of room (map of %d cells)\n",
			k.Frames, k.Datagrams, k.Counted, k.Flows, k.ToUser, k.InsertFailed, k.Cells)
		fmt.Fprintf(w, "kernel events    %d read, %d lost (ring full), %d flows' final counts lost; maps of %.1f MiB\n",
			k.Events, k.EventsLost, k.RecordsLost, float64(k.MemoryBytes)/(1<<20))
	}
	if s.RestoredFlows != nil {
		fmt.Fprintf(w, "restored         %d open flows taken over from the snapshot\n", *s.RestoredFlows)
	}
	if s.SnapshotFlows != nil {
		fmt.Fprintf(w, "snapshot         %d open flows carried to the next run\n", *s.SnapshotFlows)
	}
	if s.FlowsAtCap > 0 {
		fmt.Fprintf(w, "flow table full  %d flows timed out early at the max-flows cap (half-open first)\n", s.FlowsAtCap)
	}
	if s.FlowsShed > 0 {
		fmt.Fprintf(w, "SYNs shed        %d new flows' SYNs came with the flow table full: counted, no record (entered at their next packet)\n", s.FlowsShed)
	}
	if s.TraceStart.IsZero() {
		fmt.Fprintf(w, "trace            -\n")
	} else {
		fmt.Fprintf(w, "trace            %s .. %s (%.3f s)\n", s.TraceStart.Format(time.RFC3339Nano), s.TraceEnd.Format(time.RFC3339Nano), s.TraceSeconds)
	}
	if s.Packets < minRatePackets || s.RunSeconds < minRateSeconds {
		fmt.Fprintf(w, "run              %.3f s (too short for a meaningful packet rate)\n", s.RunSeconds)
	} else {
		fmt.Fprintf(w, "run              %.3f s, %.0f packets/s\n", s.RunSeconds, s.PacketsPerSecond)
	}
	if s.ReadError != "" {
		fmt.Fprintf(w, "stopped          %s\n", s.ReadError)
	}
}

// shadowLine spells the ACSM's own measured error against its target.
func shadowLine(sh *pipeline.ShadowSummary) string {
	if sh.Checks == 0 {
		return fmt.Sprintf("not measured (target %g; the exact backend has no shadow, or no sampled flow was seen)", sh.Target)
	}
	verdict := "too few checks to show it within target"
	switch {
	case sh.OverTarget():
		verdict = "ABOVE TARGET"
	case sh.WithinTarget():
		verdict = "within target"
	}
	return fmt.Sprintf("%.4g measured (%d false positives, %d false negatives, %d wrong states in %d checks of 1 in %d flows): "+
		"error ≤ %.2g%% at %g%% confidence, target %g: %s",
		sh.ErrorRate, sh.FalsePositives, sh.FalseNegatives, sh.WrongState, sh.Checks, sh.Rate,
		100*sh.ErrorBound, 100*pipeline.Confidence, sh.Target, verdict)
}

func printCounts(w io.Writer, name string, m map[string]uint64) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	if len(parts) == 0 {
		parts = []string{"-"}
	}
	fmt.Fprintf(w, "%-16s %s\n", name, strings.Join(parts, " "))
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// drawProgress redraws the status line with the replay's progress every
// 200 ms until stopped, which clears it.
func drawProgress(l *statusLine, p *pipeline.Progress) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		start := time.Now()
		for {
			select {
			case <-done:
				l.clear()
				return
			case <-t.C:
				pk := p.Packets.Load()
				rate := float64(pk) / time.Since(start).Seconds()
				read, all := p.BytesRead.Load(), p.BytesAll.Load()
				if all > 0 {
					frac := float64(read) / float64(all)
					bar := strings.Repeat("=", int(frac*30)) + strings.Repeat(" ", 30-int(frac*30))
					l.draw(fmt.Sprintf("[%s] %5.1f%% %d packets %.0f pkt/s", bar, 100*frac, pk, rate))
				} else {
					l.draw(fmt.Sprintf("%d MB read, %d packets, %.0f pkt/s", read>>20, pk, rate))
				}
			}
		}
	}()
	return func() { close(done); <-finished }
}
