//go:build linux

package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flowmon/flowmon/acsm"
	"github.com/flowmon/flowmon/gen"
	"github.com/flowmon/flowmon/internal/testutil/bpftest"
	"github.com/flowmon/flowmon/internal/testutil/sharedpcaps"
	"github.com/flowmon/flowmon/pipeline/flowcount"
	"github.com/flowmon/flowmon/pipeline/kernelflows"
	"github.com/flowmon/flowmon/record"
)

// stateRecords replays files with one worker, the exact ACSM and the
// dedup stage (the default) or none, in kernel state or not, and returns
// the final records (not the interim ones) and the summary.
func stateRecords(t *testing.T, files []string, kernel, dedup bool) ([]record.Flow, *Summary, error) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Workers = 1
	cfg.ACSM.Backend = acsm.BackendExact
	cfg.NoDedup = !dedup
	var keep reasons
	cfg.Sinks = []record.Named{{Name: "keep", Sink: &keep}}
	if kernel {
		cfg.KernelState = &kernelflows.Config{Cells: cfg.MaxFlows, EventRing: 1 << 22}
	}
	s, err := Replay(context.Background(), files, ReplayOptions{Config: cfg})
	if err != nil {
		return nil, s, err
	}
	var final []record.Flow
	for _, f := range keep.flows {
		if f.EndReason != record.EndActive {
			final = append(final, f)
		}
	}
	return final, s, nil
}

// recordDiff says how two records of one flow differ in what the
// kernel state must give as user space does ("" when they agree).
func recordDiff(u, k *record.Flow) string {
	var d []string
	if u.State != k.State {
		d = append(d, fmt.Sprintf("conn_state %v/%v", u.State, k.State))
	}
	if u.Orig != k.Orig || u.OrigPort != k.OrigPort || u.Resp != k.Resp || u.RespPort != k.RespPort {
		d = append(d, "orientation")
	}
	if u.OrigPkts != k.OrigPkts || u.RespPkts != k.RespPkts {
		d = append(d, fmt.Sprintf("packets %d,%d/%d,%d", u.OrigPkts, u.RespPkts, k.OrigPkts, k.RespPkts))
	}
	if u.OrigBytes != k.OrigBytes || u.RespBytes != k.RespBytes {
		d = append(d, fmt.Sprintf("bytes %d,%d/%d,%d", u.OrigBytes, u.RespBytes, k.OrigBytes, k.RespBytes))
	}
	if u.OrigIPBytes != k.OrigIPBytes || u.RespIPBytes != k.RespIPBytes {
		d = append(d, "ip bytes")
	}
	if u.OrigTCPFlags != k.OrigTCPFlags || u.RespTCPFlags != k.RespTCPFlags {
		d = append(d, "flags")
	}
	if u.History != k.History {
		d = append(d, fmt.Sprintf("history %s/%s", u.History.String(), k.History.String()))
	}
	if u.MissedBytes != k.MissedBytes {
		d = append(d, "missed bytes")
	}
	if u.Start != k.Start || u.End != k.End {
		d = append(d, "times")
	}
	return strings.Join(d, ", ")
}

// kernelCompare is the comparison of one capture's records.
type kernelCompare struct {
	flows, agree int
	diffs        []string
}

// compareKernel pairs the records by uid (the same code makes it from
// the same first packet in both) and compares each pair.
func compareKernel(user, kern []record.Flow) kernelCompare {
	var c kernelCompare
	byUID := map[uint64]*record.Flow{}
	for i := range kern {
		byUID[kern[i].UID] = &kern[i]
	}
	for i := range user {
		u := &user[i]
		c.flows++
		k := byUID[u.UID]
		if k == nil {
			c.diffs = append(c.diffs, fmt.Sprintf("%v:%d > %v:%d %d: no kernel record (tunnel parent %x)",
				u.Orig, u.OrigPort, u.Resp, u.RespPort, u.Proto, u.TunnelParent))
			continue
		}
		delete(byUID, u.UID)
		if d := recordDiff(u, k); d != "" {
			c.diffs = append(c.diffs, fmt.Sprintf("%v:%d > %v:%d %d: %s", u.Orig, u.OrigPort, u.Resp, u.RespPort, u.Proto, d))
			continue
		}
		c.agree++
	}
	for _, k := range byUID {
		c.diffs = append(c.diffs, fmt.Sprintf("%v:%d > %v:%d %d: only in the kernel's records", k.Orig, k.OrigPort, k.Resp, k.RespPort, k.Proto))
	}
	return c
}

// TestKernelStateMatchesUserState replays every real Ethernet capture and
// a generated trace with the flows kept in the kernel's flow state and
// with them kept in user space (both with the exact ACSM, one worker, no
// dedup stage), and pairs the records by uid: conn_state, orientation,
// packets, bytes, IP bytes, flag unions, history, missed bytes and times
// must agree. Every difference is logged with its flow; a capture with a
// difference must be one of kernelStateDiffers, which says why, and the
// share of flows that agree must stay at or above 99.9%, so that a new
// cause of difference in a capture already listed still fails.
func TestKernelStateMatchesUserState(t *testing.T) { matchKernelState(t, false) }

// TestKernelStateMatchesUserStateDedup is TestKernelStateMatchesUserState
// with the dedup stage on both sides (the default): the kernel's
// duplicate window for the frames it keeps, the user-space stage for the
// others and for every frame in user state. The summaries' duplicates
// must agree too.
func TestKernelStateMatchesUserStateDedup(t *testing.T) { matchKernelState(t, true) }

// kernelStateDiffers are the captures whose records differ between the
// kernel's and user space's flow state, by their file name, and why.
var kernelStateDiffers = map[string]string{
	// Fuzzed captures whose packet times jump by years, back and forth:
	// the user-space ACSM's generation rings rotate at each jump forward
	// and forget flows that the kernel's cells keep.
	"tcpdump/babel_update_oobr.pcap": "times going backwards", "tcpdump/kday3.pcap": "times going backwards",
	"tcpdump/olsr-oobr-1.pcap": "times going backwards",
	// An unanswered attempt timed out by the sweeps (its originator quiet
	// past the attempt delay), then the originator's data without a SYN:
	// user space starts the new flow from the ACSM's value, which it
	// keeps for the 5-tuple (S0); the kernel's sweep took the cell, and
	// the new one starts from the packet (OTH, as a new connection from
	// the middle).
	"tcpdump/ldp-common-session.pcap": "an attempt the sweep timed out, then midstream data",
	// Both ports 47808 (BACnet): the user-space ACSM's orientation of the
	// flow's first packet differs from the program's.
	"arkime/bacnet-stack-services.pcap": "orientation with equal ports",
	// With dedup: the user-space duplicate window takes one of the PIM
	// hellos, the same frame every second, for a duplicate.
	"arkime/ospf.pcap": "a hello taken for a duplicate in user space",
}

func matchKernelState(t *testing.T, dedup bool) {
	bpftest.Require(t)
	trace := genTrace(t, gen.Options{Flows: 20000, Seed: 5, Duration: 60 * time.Second})
	files := []string{trace}
	for _, c := range sharedpcaps.Captures(t) {
		if strings.HasPrefix(c.Link, "1/EN10MB") {
			files = append(files, c.Path)
		}
	}
	total, agree := 0, 0
	var udup, kdup uint64
	byCapture := map[string][]string{}
	for _, f := range files {
		user, us, uerr := stateRecords(t, []string{f}, false, dedup)
		kern, ks, kerr := stateRecords(t, []string{f}, true, dedup)
		if uerr != nil || kerr != nil {
			// A damaged capture: both must stop on it alike.
			if (uerr == nil) != (kerr == nil) {
				t.Errorf("%s: user state: %v; kernel state: %v", f, uerr, kerr)
			}
			if us == nil || ks == nil {
				continue
			}
		}
		if ks.KernelState == nil {
			t.Fatalf("%s: no kernel_state in the summary", f)
		}
		if us.Packets != ks.Packets {
			t.Errorf("%s: %d packets read in user state, %d in kernel state", f, us.Packets, ks.Packets)
		}
		udup += us.Duplicates
		kdup += ks.Duplicates
		if us.Duplicates != ks.Duplicates {
			t.Logf("%s: %d duplicates in user state, %d in kernel state", f, us.Duplicates, ks.Duplicates)
		}
		c := compareKernel(user, kern)
		total += c.flows
		agree += c.agree
		if len(c.diffs) > 0 {
			byCapture[f] = c.diffs
		}
	}
	names := make([]string, 0, len(byCapture))
	for n := range byCapture {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		rel, _ := filepath.Rel(sharedpcaps.Dir(t), n)
		why, known := kernelStateDiffers[filepath.ToSlash(rel)]
		for _, d := range byCapture[n] {
			t.Logf("%s: %s (%s)", n, d, why)
		}
		if !known {
			t.Errorf("%s: %d flows differ, for no known cause", n, len(byCapture[n]))
		}
	}
	share := float64(agree) / float64(max(total, 1))
	t.Logf("%d files, %d flows, %d agree (%.4f%%), %d files with a difference; duplicates %d in user state, %d in kernel state",
		len(files), total, agree, 100*share, len(byCapture), udup, kdup)
	if share < 0.999 {
		t.Errorf("%.4f%% of the flows agree, want at least 99.9%%", 100*share)
	}
}

// TestKernelStateCountsLikeUserState: the flow counter's windows (the
// CCF a peer compares, flowmon diff --peer) hold the same packets for
// every flow with the flows kept in the kernel as in user space. A
// generated trace over three windows is replayed both ways (one worker,
// exact ACSM, dedup on); the last window's filters, merged over the
// pipeline's counters, give every flow the same count.
func TestKernelStateCountsLikeUserState(t *testing.T) {
	bpftest.Require(t)
	trace := genTrace(t, gen.Options{Flows: 5000, Seed: 8, Duration: 150 * time.Second})
	run := func(kernel bool) (*Pipeline, []record.Flow) {
		cfg := DefaultConfig()
		cfg.Workers = 1
		cfg.ACSM.Backend = acsm.BackendExact
		var keep reasons
		cfg.Sinks = []record.Named{{Name: "keep", Sink: &keep}}
		if kernel {
			cfg.KernelState = &kernelflows.Config{Cells: cfg.MaxFlows}
		}
		pl, err := NewPipeline(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Replay(context.Background(), []string{trace}, ReplayOptions{Config: cfg, Pipeline: pl}); err != nil {
			t.Fatal(err)
		}
		return pl, keep.flows
	}
	count := func(pl *Pipeline, h uint64) (n uint64, start time.Time) {
		cs := []*flowcount.Counter{pl.kcounter}
		for _, s := range pl.shards {
			cs = append(cs, s.counter)
		}
		for _, c := range cs {
			if c == nil || c.Last() == nil {
				continue
			}
			n += c.Last().Filter.Count(h)
			start = c.Last().Start
		}
		return n, start
	}
	user, flows := run(false)
	kern, _ := run(true)
	if kern.kcounter.Last() == nil {
		t.Fatal("the kernel's counter published no window")
	}
	seen, counted := map[uint64]bool{}, 0
	for _, f := range flows {
		if seen[f.Hash] {
			continue
		}
		seen[f.Hash] = true
		u, us := count(user, f.Hash)
		k, ks := count(kern, f.Hash)
		if !us.Equal(ks) {
			t.Fatalf("last windows start at %v in user state, %v in kernel state", us, ks)
		}
		if u != k {
			t.Errorf("flow %v:%d > %v:%d: %d packets in the last window in user state, %d in kernel state",
				f.Orig, f.OrigPort, f.Resp, f.RespPort, u, k)
		}
		if u > 0 {
			counted++
		}
	}
	t.Logf("%d flows, %d of them in the last window, the same count in both", len(seen), counted)
	if counted == 0 {
		t.Fatal("no flow in the last window")
	}
}
