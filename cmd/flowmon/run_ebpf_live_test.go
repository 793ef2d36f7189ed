//go:build linux

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/flowmon/flowmon/internal/testutil/bpftest"
	"github.com/flowmon/flowmon/internal/testutil/netnstest"
)

// TestRunXDPMatchesReplay: flowmon run --source xdp on one end of a veth
// pair, with one and two workers (rings), sees what flowmon replay reads
// in the trace sent into the other end.
func TestRunXDPMatchesReplay(t *testing.T) {
	bpftest.Require(t)
	testRunMatchesReplay(t, "xdp", "1", "2")
}

// TestRunTCMatchesReplay: the same with the program at TC (TCX links).
func TestRunTCMatchesReplay(t *testing.T) {
	bpftest.Require(t)
	testRunMatchesReplay(t, "tc", "1", "2")
}

// TestRunEBPFCountsInSummary: flowmon run --source xdp reports what the
// program counted. With a one-page ring and flowmon stopped (SIGSTOP)
// while the trace is sent, the ring fills: the summary's lost records are
// the program's count, and the records read and those lost add up to the
// packets sent, so nothing is lost silently. With sampling on, the
// summary says the rate, and the packets read and those sampled out add
// up to the packets sent.
func TestRunEBPFCountsInSummary(t *testing.T) {
	bpftest.Require(t)
	n := liveNet(t)
	bin := buildFlowmon(t)
	trace := writeLiveTrace(t, 500, 1, 13)
	config := func(body string) string {
		name := filepath.Join(t.TempDir(), "flowmon.yaml")
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return name
	}
	t.Run("full-ring", func(t *testing.T) {
		a := startAgent(t, bin, n, "--source", "xdp", "--workers", "1", "--rules", "none",
			"--config", config("ebpf:\n  ring-size: 4KiB\n"))
		if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		st, err := n.Send(n.A, trace, netnstest.SendOptions{})
		if cerr := a.cmd.Process.Signal(syscall.SIGCONT); cerr != nil {
			t.Fatal(cerr)
		}
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		got := a.stop(t)
		e := got.EBPF
		if e == nil {
			t.Fatalf("the summary has no ebpf part")
		}
		t.Logf("sent %d packets; read %d, ebpf %+v, kernel drops %v", st.Packets, got.Packets, *e, deref(got.KernelDrops))
		if e.Lost == 0 {
			t.Errorf("a one-page ring lost no record of %d packets sent while flowmon was stopped", st.Packets)
		}
		if got.KernelDrops == nil || *got.KernelDrops != e.Lost {
			t.Errorf("kernel_drops %v, the program's lost records %d", deref(got.KernelDrops), e.Lost)
		}
		if e.Seen != st.Packets || got.Packets+e.Lost != st.Packets || e.Emitted != got.Packets {
			t.Errorf("sent %d: the program saw %d, emitted %d, lost %d; flowmon read %d (read + lost should be sent)",
				st.Packets, e.Seen, e.Emitted, e.Lost, got.Packets)
		}
	})
	t.Run("sampling", func(t *testing.T) {
		a := startAgent(t, bin, n, "--source", "xdp", "--workers", "1", "--rules", "none",
			"--config", config("ebpf:\n  sample: 4\n"))
		st, err := n.Send(n.A, trace, netnstest.SendOptions{Rate: 20000})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		got := a.stop(t)
		e := got.EBPF
		if e == nil {
			t.Fatalf("the summary has no ebpf part")
		}
		t.Logf("sent %d packets; read %d, ebpf %+v", st.Packets, got.Packets, *e)
		if e.SampleOneIn != 4 {
			t.Errorf("summary ebpf.sample_one_in %d, want 4", e.SampleOneIn)
		}
		if e.SampledOut == 0 || e.Lost != 0 || e.Seen != st.Packets || got.Packets+e.SampledOut != st.Packets {
			t.Errorf("sent %d: the program saw %d, sampled out %d, lost %d; flowmon read %d (read + sampled out should be sent)",
				st.Packets, e.Seen, e.SampledOut, e.Lost, got.Packets)
		}
	})
}
